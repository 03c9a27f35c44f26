// Device memory shared between two processes on level_zero:0, through the
// real Level Zero loader and the fake driver (testing/fake_level_zero),
// whose exportable memory is a memfd the handle's descriptor names. Here
// the exporter orders its writes by waiting for them on the host before it
// sends the handle (keel.h's ipc.memory-ordering), the importer by
// synchronizing its stream before it says so over the socket; shared
// events: level_zero_ipc_event_test.cpp.
#include "two_processes.hpp"

#include <keel/ipc.hpp>
#include <keel/keel.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <fcntl.h>
#include <string>
#include <unistd.h>
#include <vector>

namespace keel {
namespace {

using testing::expect_both_ok;
using testing::receive_byte;
using testing::run_two_processes;
using testing::send_byte;

constexpr std::uint64_t kLzBytes = 64 * 1024;

std::vector<std::uint8_t> lz_pattern(std::uint8_t seed) { return testing::byte_pattern(kLzBytes, seed); }

std::string lz_check_pattern(const std::vector<std::uint8_t>& got, std::uint8_t seed, const char* when) {
    return testing::pattern_mismatch(got, kLzBytes, seed, when);
}

TEST(LevelZeroIpcMemory, WritesOfEitherProcessAreSeenByTheOtherAndOutliveTheExporter) {
    auto result = run_two_processes(
        [](int socket) -> std::string {
            IPC_SIDE_ASSIGN(Runtime rt, Runtime::create());
            IPC_SIDE_ASSIGN(Device dev, rt.device("level_zero:0"));
            IPC_SIDE_EXPECT(dev.has(DeviceCapability::ipc_memory), "level_zero:0 lacks IPC_MEMORY");
            IPC_SIDE_ASSIGN(Stream s, Stream::create(dev));
            IPC_SIDE_ASSIGN(RawBuffer mem, ipc::allocate_exportable(dev, kLzBytes));
            IPC_SIDE_OK(s.copy(mem.view(), lz_pattern(3)));
            IPC_SIDE_OK(s.synchronize());  // ordered before the handle leaves
            IPC_SIDE_ASSIGN(ipc::Handle mh, ipc::export_memory(mem));
            IPC_SIDE_EXPECT(mh.fd() >= 0, "the handle carries no descriptor");
            IPC_SIDE_OK(ipc::send_handle(socket, mh));
            IPC_SIDE_STEP(receive_byte(socket));  // the importer read ours and wrote its own
            IPC_SIDE_ASSIGN(auto future, s.copy_to_vector<std::uint8_t>(mem.view()));
            IPC_SIDE_ASSIGN(std::vector<std::uint8_t> got, std::move(future).get());
            IPC_SIDE_STEP(lz_check_pattern(got, 5, "the exporter reading the importer's write"));
            IPC_SIDE_OK(mem.free());
            // A new allocation must not take the shared bytes over.
            IPC_SIDE_ASSIGN(RawBuffer other, ipc::allocate_exportable(dev, kLzBytes));
            IPC_SIDE_OK(s.memset(other.view(), 0xEE));
            IPC_SIDE_OK(s.synchronize());
            return send_byte(socket);  // then exits, closing the socket
        },
        [](int socket) -> std::string {
            IPC_SIDE_ASSIGN(Runtime rt, Runtime::create());
            IPC_SIDE_ASSIGN(Device dev, rt.device("level_zero:0"));
            IPC_SIDE_ASSIGN(Stream s, Stream::create(dev));
            IPC_SIDE_ASSIGN(ipc::Handle mh, ipc::receive_handle(socket));
            IPC_SIDE_EXPECT(mh.kind() == KEEL_IPC_HANDLE_MEMORY && mh.size() == kLzBytes, "a memory handle of 64 KiB");
            IPC_SIDE_ASSIGN(ipc::ImportedBuffer mem, ipc::import_memory(dev, mh));
            IPC_SIDE_ASSIGN(auto future, s.copy_to_vector<std::uint8_t>(mem.view()));
            IPC_SIDE_ASSIGN(std::vector<std::uint8_t> got, std::move(future).get());
            IPC_SIDE_STEP(lz_check_pattern(got, 3, "the importer reading the exporter's write"));
            IPC_SIDE_OK(s.copy(mem.view(), lz_pattern(5)));
            IPC_SIDE_OK(s.synchronize());
            IPC_SIDE_STEP(send_byte(socket));
            IPC_SIDE_STEP(receive_byte(socket));  // the exporter freed its allocation
            char b = 0;
            IPC_SIDE_EXPECT(::read(socket, &b, 1) == 0, "the exporter sent something instead of exiting");
            IPC_SIDE_ASSIGN(auto again, s.copy_to_vector<std::uint8_t>(mem.view()));
            IPC_SIDE_ASSIGN(std::vector<std::uint8_t> kept, std::move(again).get());
            IPC_SIDE_STEP(lz_check_pattern(kept, 5, "after the exporter freed and exited"));
            IPC_SIDE_OK(mem.close());
            return "";
        });
    expect_both_ok(result);
}

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
