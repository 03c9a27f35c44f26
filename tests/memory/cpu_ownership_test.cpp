// Buffers keep their memory instance through their pool's count of blocks
// out (no shared counter per buffer): on the CPU plugin, through the public
// API, an instance kept only by buffers is still the device's shared one.
#include "device_fixture.hpp"

#include <keel/keel.hpp>

#include <gtest/gtest.h>

namespace keel {
namespace {

TEST(CpuOwnership, ASharedInstanceKeptOnlyByABufferIsFoundAgainByTheNextStream) {
    const Runtime rt = testing::checked_cpu_runtime();
    const Device device = rt.device("cpu:0").expect("cpu:0");
    Buffer kept;
    {
        const Stream first = Stream::create(device).expect("a stream");
        kept = Buffer::allocate(first, 4096).expect("a buffer");
    }  // every handle of the shared instance is gone: the buffer keeps it
    const Stream second = Stream::create(device).expect("a stream");
    const MemoryPool memory = second.memory().expect("its memory");
    const AllocatorStats with = memory.stats();
    EXPECT_GE(with.allocated_count, 1u);
    kept.reset();
    EXPECT_EQ(memory.stats().allocated_count, with.allocated_count - 1)
        << "the buffer's instance is not the device's shared instance any more";
    // The instance keeps working for the new stream after the old buffer went.
    const Buffer fresh = Buffer::allocate(second, 4096).expect("a buffer");
    EXPECT_EQ(memory.stats().allocated_count, with.allocated_count);
    EXPECT_TRUE(second.synchronize().ok());
}

}  // namespace
}  // namespace keel
