// Buffers keep their memory instance through their pool's count of blocks
// out (no shared counter per buffer): on the CPU plugin, through the public
// API, an instance kept only by buffers is still the device's shared one.
#include <keel/keel.hpp>

#include <gtest/gtest.h>

#include <cstdlib>

namespace keel {
namespace {

TEST(CpuOwnership, ASharedInstanceKeptOnlyByABufferIsFoundAgainByTheNextStream) {
    // The settings of cpu_e2e_test.cpp, whose tests may share this process
    // (the plugin reads them once, when it is first loaded).
    ::setenv("KEEL_CPU_CHECK", "1", 1);
    ::setenv("KEEL_CPU_DELAY", "random:100", 1);
    ::setenv("KEEL_CPU_SEED", "11", 1);
    const Runtime rt = Runtime::create().expect("loading the plugins");
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
