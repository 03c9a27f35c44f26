// The generic path's staging copies go through the runtime's Stream::copy in
// every mode, not only under KEEL_CHECK: what the runtime checks at a copy
// (here a checked memory instance's use-after-free check) applies to a
// communicator's copies as to the application's own. cpu:0's memory is not
// host-addressable, so its operations are staged.
#include <keel/comm.hpp>
#include <keel/keel.hpp>
#include <keel/testing/result.hpp>

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

namespace keel {
namespace {

std::string fresh_store_directory() {
    std::string dir = (std::filesystem::temp_directory_path() / "keel-runtime-path-XXXXXX").string();
    EXPECT_NE(::mkdtemp(dir.data()), nullptr);
    return dir;
}

// Copied straight through the plugin's table, outside KEEL_CHECK, the freed
// buffer's bytes were reduced and written back with no error.
TEST(CommRuntimePath, AStagedInputFromAFreedBufferIsRefusedByCheckedMemoryWithoutKeelCheck) {
    const Runtime rt = Runtime::create().value();
    const Device dev = rt.device("cpu:0").value();
    ASSERT_FALSE(dev.has(DeviceCapability::host_addressable)) << "cpu:0 no longer stages: pick a staged device";
    MemoryConfig config;
    config.allocator.checked = true;
    const MemoryPool memory = MemoryPool::create(dev, config).value();
    const Stream s = Stream::create(memory).value();
    const std::string dir = fresh_store_directory();
    KEEL_ASSERT_OK_AND_ASSIGN(Communicator comm, Communicator::create(dev, Store::file(dir).value(), 0, 1));
    ASSERT_FALSE(comm.uses_native_engine()) << comm.engine_description();

    Buffer live = Buffer::allocate(s, 256).value();
    DeviceView freed;
    {
        Buffer gone = Buffer::allocate(s, 256).value();
        freed = gone.view();
    }
    KEEL_ASSERT_OK(s.synchronize());
    const Result<void> r = comm.all_reduce(s, freed, live.view(), KEEL_DTYPE_F32, ReduceOp::sum);
    ASSERT_FALSE(r.ok()) << "an all_reduce read a freed buffer";
    EXPECT_NE(r.error().message().find("use after free"), std::string::npos) << r.error().message();
    EXPECT_NE(r.error().message().find("all_reduce"), std::string::npos) << r.error().message();
    (void)s.synchronize();
    std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace keel
