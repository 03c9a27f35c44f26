// The CPU checker's three lifetime errors of memory shared between
// processes (KEEL_CPU_CHECK=1 in both processes): the exporter freeing what
// an importer has open, an importer using memory after closing it, and an
// importer reading before the exporter's writes are ordered by the shared
// event.
#include "two_processes.hpp"

#include <keel/ipc.hpp>
#include <keel/keel.hpp>
#include <keel/testing/scoped_env.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <unistd.h>
#include <vector>

namespace keel {
namespace {

using testing::expect_both_ok;
using testing::receive_byte;
using testing::run_two_processes;
using testing::send_byte;
using testing::ScopedEnv;

constexpr std::uint64_t kCheckedBytes = 64 * 1024;


std::string contains(const Error& e, const std::string& what) {
    return e.message().find(what) != std::string::npos ? "" : "the error does not say '" + what + "': " + e.message();
}


class IpcChecker : public ::testing::Test {
protected:
    ScopedEnv env_{"KEEL_CPU_CHECK", "1"};
};

TEST_F(IpcChecker, TheExporterFreeingMemoryAnImporterStillHasOpenIsRefused) {
    auto result = run_two_processes(
        [](int socket) -> std::string {
            IPC_SIDE_ASSIGN(Runtime rt, Runtime::create());
            IPC_SIDE_ASSIGN(Device dev, rt.device("cpu:0"));
            IPC_SIDE_ASSIGN(RawBuffer mem, ipc::allocate_exportable(dev, kCheckedBytes));
            const keel_device_addr address = mem.address();
            IPC_SIDE_ASSIGN(ipc::Handle mh, ipc::export_memory(mem));
            IPC_SIDE_OK(ipc::send_handle(socket, mh));
            IPC_SIDE_STEP(receive_byte(socket));  // imported
            auto early = mem.free();
            IPC_SIDE_EXPECT(!early.ok(), "freeing memory an importer has open was accepted");
            IPC_SIDE_EXPECT(early.error().code() == KEEL_STATUS_FAILED_PRECONDITION, early.error().message());
            IPC_SIDE_STEP(contains(early.error(), "importer(s) still have it open"));
            IPC_SIDE_STEP(send_byte(socket));
            IPC_SIDE_STEP(receive_byte(socket));  // closed
            // The refused free left it allocated: freeing it now is fine.
            RawBuffer again = RawBuffer::adopt(dev, address, kCheckedBytes);
            IPC_SIDE_OK(again.free());
            return "";
        },
        [](int socket) -> std::string {
            IPC_SIDE_ASSIGN(Runtime rt, Runtime::create());
            IPC_SIDE_ASSIGN(Device dev, rt.device("cpu:0"));
            IPC_SIDE_ASSIGN(ipc::Handle mh, ipc::receive_handle(socket));
            IPC_SIDE_ASSIGN(ipc::ImportedBuffer mem, ipc::import_memory(dev, mh));
            IPC_SIDE_STEP(send_byte(socket));
            IPC_SIDE_STEP(receive_byte(socket));  // the exporter tried
            IPC_SIDE_OK(mem.close());
            return send_byte(socket);
        });
    expect_both_ok(result);
}

TEST_F(IpcChecker, AnImporterUsingMemoryAfterClosingItIsRefused) {
    auto result = run_two_processes(
        [](int socket) -> std::string {
            IPC_SIDE_ASSIGN(Runtime rt, Runtime::create());
            IPC_SIDE_ASSIGN(Device dev, rt.device("cpu:0"));
            IPC_SIDE_ASSIGN(RawBuffer mem, ipc::allocate_exportable(dev, kCheckedBytes));
            IPC_SIDE_ASSIGN(ipc::Handle mh, ipc::export_memory(mem));
            IPC_SIDE_OK(ipc::send_handle(socket, mh));
            return receive_byte(socket);
        },
        [](int socket) -> std::string {
            IPC_SIDE_ASSIGN(Runtime rt, Runtime::create());
            IPC_SIDE_ASSIGN(Device dev, rt.device("cpu:0"));
            IPC_SIDE_ASSIGN(Stream s, Stream::create(dev));
            IPC_SIDE_ASSIGN(ipc::Handle mh, ipc::receive_handle(socket));
            IPC_SIDE_ASSIGN(ipc::ImportedBuffer mem, ipc::import_memory(dev, mh));
            const DeviceView stale = mem.view();
            IPC_SIDE_OK(mem.close());
            auto late = s.memset(stale, 1);
            IPC_SIDE_EXPECT(!late.ok(), "a memset of closed imported memory was accepted");
            IPC_SIDE_STEP(contains(late.error(), "use after close of imported memory"));
            return send_byte(socket);
        });
    expect_both_ok(result);
}

TEST_F(IpcChecker, AnImporterReadingBeforeTheSharedEventOrdersTheExportersWritesIsRefused) {
    auto result = run_two_processes(
        [](int socket) -> std::string {
            IPC_SIDE_ASSIGN(Runtime rt, Runtime::create());
            IPC_SIDE_ASSIGN(Device dev, rt.device("cpu:0"));
            IPC_SIDE_ASSIGN(Stream s, Stream::create(dev));
            IPC_SIDE_ASSIGN(RawBuffer mem, ipc::allocate_exportable(dev, kCheckedBytes));
            IPC_SIDE_ASSIGN(Event written, ipc::create_event(dev));
            IPC_SIDE_ASSIGN(ipc::Handle mh, ipc::export_memory(mem));
            IPC_SIDE_OK(s.memset(mem.view(), 0x5A));
            IPC_SIDE_OK(written.record(s));
            IPC_SIDE_ASSIGN(ipc::Handle eh, ipc::export_event(written));
            IPC_SIDE_OK(ipc::send_handle(socket, mh));
            IPC_SIDE_OK(ipc::send_handle(socket, eh));
            IPC_SIDE_STEP(receive_byte(socket));
            IPC_SIDE_OK(s.synchronize());
            return "";
        },
        [](int socket) -> std::string {
            IPC_SIDE_ASSIGN(Runtime rt, Runtime::create());
            IPC_SIDE_ASSIGN(Device dev, rt.device("cpu:0"));
            IPC_SIDE_ASSIGN(Stream s, Stream::create(dev));
            IPC_SIDE_ASSIGN(ipc::Handle mh, ipc::receive_handle(socket));
            IPC_SIDE_ASSIGN(ipc::Handle eh, ipc::receive_handle(socket));
            IPC_SIDE_ASSIGN(ipc::ImportedBuffer mem, ipc::import_memory(dev, mh));
            IPC_SIDE_ASSIGN(Event written, ipc::import_event(dev, eh));
            {
                IPC_SIDE_ASSIGN(Stream racer, Stream::create(dev));
                auto early = racer.copy_to_vector<std::uint8_t>(mem.view());
                IPC_SIDE_EXPECT(!early.ok(), "a read before waiting for the shared event was accepted");
                IPC_SIDE_STEP(contains(early.error(), "before the exporter's writes are ordered by the shared event"));
            }
            IPC_SIDE_OK(s.wait(written));
            IPC_SIDE_ASSIGN(auto future, s.copy_to_vector<std::uint8_t>(mem.view()));
            IPC_SIDE_ASSIGN(std::vector<std::uint8_t> got, std::move(future).get());
            IPC_SIDE_EXPECT(got == std::vector<std::uint8_t>(kCheckedBytes, 0x5A), "the ordered read saw other bytes");
            IPC_SIDE_OK(mem.close());
            return send_byte(socket);
        });
    expect_both_ok(result);
}

TEST_F(IpcChecker, WritesTheExporterSynchronizedBeforeExportingNeedNoEvent) {
    auto result = run_two_processes(
        [](int socket) -> std::string {
            IPC_SIDE_ASSIGN(Runtime rt, Runtime::create());
            IPC_SIDE_ASSIGN(Device dev, rt.device("cpu:0"));
            IPC_SIDE_ASSIGN(Stream s, Stream::create(dev));
            IPC_SIDE_ASSIGN(RawBuffer mem, ipc::allocate_exportable(dev, kCheckedBytes));
            IPC_SIDE_OK(s.memset(mem.view(), 0x33));
            IPC_SIDE_OK(s.synchronize());
            IPC_SIDE_ASSIGN(ipc::Handle mh, ipc::export_memory(mem));
            IPC_SIDE_OK(ipc::send_handle(socket, mh));
            return receive_byte(socket);
        },
        [](int socket) -> std::string {
            IPC_SIDE_ASSIGN(Runtime rt, Runtime::create());
            IPC_SIDE_ASSIGN(Device dev, rt.device("cpu:0"));
            IPC_SIDE_ASSIGN(Stream s, Stream::create(dev));
            IPC_SIDE_ASSIGN(ipc::Handle mh, ipc::receive_handle(socket));
            IPC_SIDE_ASSIGN(ipc::ImportedBuffer mem, ipc::import_memory(dev, mh));
            IPC_SIDE_ASSIGN(auto future, s.copy_to_vector<std::uint8_t>(mem.view()));
            IPC_SIDE_ASSIGN(std::vector<std::uint8_t> got, std::move(future).get());
            IPC_SIDE_EXPECT(got == std::vector<std::uint8_t>(kCheckedBytes, 0x33), "the read saw other bytes");
            IPC_SIDE_OK(mem.close());
            return send_byte(socket);
        });
    expect_both_ok(result);
}

}  // namespace
}  // namespace keel
