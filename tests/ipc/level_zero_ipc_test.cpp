// Device memory shared between two processes on level_zero:0, through the
// real Level Zero loader and the fake driver (testing/fake_level_zero),
// whose exportable memory is a memfd the handle's descriptor names: the
// scenarios every device runs (ipc_scenarios.cpp), and what Level Zero's
// handles refuse; shared events: level_zero_ipc_event_test.cpp.
#include "ipc_scenarios.hpp"

#include <keel/ipc.hpp>
#include <keel/keel.hpp>

#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

namespace keel::testing {
INSTANTIATE_TEST_SUITE_P(Devices, IpcMemoryAcrossProcesses, ::testing::Values("level_zero:0"), device_test_name);
}  // namespace keel::testing

namespace keel {
namespace {

TEST(LevelZeroIpcMemory, ForeignMalformedAndMisusedHandlesAreRefused) {
    // One process: the fake driver, like keel's CPU plugin, opens a handle
    // in the process that exported it.
    auto rt = Runtime::create();
    ASSERT_TRUE(rt.ok()) << rt.error().message();
    auto dev_r = rt->device("level_zero:0");
    ASSERT_TRUE(dev_r.ok()) << dev_r.error().message();
    const Device& dev = *dev_r;
    const auto refused = [](const auto& r, const char* what) {
        ASSERT_FALSE(r.ok()) << what << " was accepted";
        EXPECT_EQ(r.error().code(), KEEL_STATUS_INVALID_ARGUMENT) << what << ": " << r.error().message();
    };
    auto plain = RawBuffer::allocate(dev, 4096);
    ASSERT_TRUE(plain.ok());
    refused(ipc::export_memory(*plain), "exporting memory of RawBuffer::allocate");
    auto mem = ipc::allocate_exportable(dev, 4096);
    ASSERT_TRUE(mem.ok()) << mem.error().message();
    auto exported = ipc::export_memory(*mem);
    ASSERT_TRUE(exported.ok()) << exported.error().message();
    const keel_ipc_handle& good = exported->c_handle();

    keel_ipc_handle no_fd = good;
    no_fd.fd = -1;
    refused(ipc::import_memory(dev, ipc::Handle::adopt(no_fd)), "a handle without its descriptor");
    keel_ipc_handle other_file = good;
    other_file.fd = ::open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
    refused(ipc::import_memory(dev, ipc::Handle::adopt(other_file)), "a handle with another file's descriptor");
    keel_ipc_handle changed = good;
    changed.fd = ::dup(good.fd);
    changed.bytes[9] ^= 0xFF;
    refused(ipc::import_memory(dev, ipc::Handle::adopt(changed)), "a handle with changed bytes");
    keel_ipc_handle larger = good;
    larger.fd = ::dup(good.fd);
    larger.size = 2 * good.size;
    refused(ipc::import_memory(dev, ipc::Handle::adopt(larger)), "a handle naming more bytes than it shares");
    keel_ipc_handle short_bytes = good;
    short_bytes.fd = ::dup(good.fd);
    short_bytes.byte_count = 16;
    refused(ipc::import_memory(dev, ipc::Handle::adopt(short_bytes)), "a handle of another plugin's length");

    // Imported memory is closed, not freed, and not exported again.
    auto imported = ipc::import_memory(dev, *exported);
    ASSERT_TRUE(imported.ok()) << imported.error().message();
    RawBuffer stolen = RawBuffer::adopt(dev, imported->address(), imported->size());
    refused(stolen.free(), "device_free of imported memory");
    RawBuffer again = RawBuffer::adopt(dev, imported->address(), imported->size());
    refused(ipc::export_memory(again), "exporting imported memory");
    (void)stolen.release();
    (void)again.release();
    EXPECT_TRUE(imported->close().ok());
    // An export after the free is refused, not served from a stale address.
    RawBuffer stale = RawBuffer::adopt(dev, mem->address(), mem->size());
    ASSERT_TRUE(mem->free().ok());
    refused(ipc::export_memory(stale), "exporting freed memory");
    (void)stale.release();
}

}  // namespace
}  // namespace keel
