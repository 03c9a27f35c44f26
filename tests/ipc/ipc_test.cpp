// Device memory and events shared between two processes on cpu:0 (keel.h
// 1.6): the scenarios every device runs (ipc_scenarios.cpp), and cpu:0's
// refusal of foreign, malformed and misused handles across two processes.
#include "ipc_scenarios.hpp"
#include "two_processes.hpp"

#include <keel/ipc.hpp>
#include <keel/keel.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <fcntl.h>
#include <string>
#include <unistd.h>

namespace keel::testing {
INSTANTIATE_TEST_SUITE_P(Devices, IpcMemoryAcrossProcesses, ::testing::Values("cpu:0"), device_test_name);
INSTANTIATE_TEST_SUITE_P(Devices, IpcEventAcrossProcesses, ::testing::Values("cpu:0"), device_test_name);
}  // namespace keel::testing

namespace keel {
namespace {

using testing::expect_both_ok;
using testing::receive_byte;
using testing::run_two_processes;
using testing::send_byte;

TEST(IpcMemory, ForeignMalformedAndMisusedHandlesAreRefused) {
    auto result = run_two_processes(
        [](int socket) -> std::string {
            IPC_SIDE_ASSIGN(Runtime rt, Runtime::create());
            IPC_SIDE_ASSIGN(Device dev, rt.device("cpu:0"));
            IPC_SIDE_ASSIGN(RawBuffer plain, RawBuffer::allocate(dev, 4096));
            auto not_exportable = ipc::export_memory(plain);
            IPC_SIDE_EXPECT(!not_exportable.ok() && not_exportable.error().code() == KEEL_STATUS_INVALID_ARGUMENT,
                            "exporting memory of RawBuffer::allocate");
            IPC_SIDE_ASSIGN(Event plain_event, Event::create(dev));
            auto no_flag = ipc::export_event(plain_event);
            IPC_SIDE_EXPECT(!no_flag.ok() && no_flag.error().code() == KEEL_STATUS_INVALID_ARGUMENT,
                            "exporting an event of Event::create");
            IPC_SIDE_ASSIGN(RawBuffer mem, ipc::allocate_exportable(dev, 4096));
            IPC_SIDE_ASSIGN(ipc::Handle mh, ipc::export_memory(mem));
            IPC_SIDE_OK(ipc::send_handle(socket, mh));
            return receive_byte(socket);
        },
        [](int socket) -> std::string {
            IPC_SIDE_ASSIGN(Runtime rt, Runtime::create());
            IPC_SIDE_ASSIGN(Device dev, rt.device("cpu:0"));
            IPC_SIDE_ASSIGN(ipc::Handle mh, ipc::receive_handle(socket));
            const auto& table_handle = mh.c_handle();
            // The wrong kind, no descriptor, another file, bytes of someone else.
            keel_ipc_handle wrong = table_handle;
            wrong.kind = KEEL_IPC_HANDLE_EVENT;
            auto as_event = ipc::import_event(dev, ipc::Handle::adopt([&] {
                keel_ipc_handle h = wrong;
                h.fd = ::dup(table_handle.fd);
                return h;
            }()));
            IPC_SIDE_EXPECT(!as_event.ok() && as_event.error().code() == KEEL_STATUS_INVALID_ARGUMENT,
                            "a memory handle imported as an event");
            keel_ipc_handle no_fd = table_handle;
            no_fd.fd = -1;
            auto without = ipc::import_memory(dev, ipc::Handle::adopt(no_fd));
            IPC_SIDE_EXPECT(!without.ok() && without.error().code() == KEEL_STATUS_INVALID_ARGUMENT,
                            "a handle without its descriptor");
            keel_ipc_handle other_file = table_handle;
            other_file.fd = ::open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
            auto other = ipc::import_memory(dev, ipc::Handle::adopt(other_file));
            IPC_SIDE_EXPECT(!other.ok() && other.error().code() == KEEL_STATUS_INVALID_ARGUMENT,
                            "a handle with another file's descriptor");
            keel_ipc_handle garbage = table_handle;
            garbage.fd = ::dup(table_handle.fd);
            garbage.bytes[9] ^= 0xFF;
            auto forged = ipc::import_memory(dev, ipc::Handle::adopt(garbage));
            IPC_SIDE_EXPECT(!forged.ok() && forged.error().code() == KEEL_STATUS_INVALID_ARGUMENT,
                            "a handle with changed bytes");
            // Imported memory is closed, not freed.
            IPC_SIDE_ASSIGN(ipc::ImportedBuffer mem, ipc::import_memory(dev, mh));
            const auto& slot_free = dev;  // RawBuffer::adopt frees with device_free
            RawBuffer stolen = RawBuffer::adopt(slot_free, mem.address(), mem.size());
            auto freed = stolen.free();
            IPC_SIDE_EXPECT(!freed.ok() && freed.error().code() == KEEL_STATUS_INVALID_ARGUMENT,
                            "device_free of imported memory");
            IPC_SIDE_OK(mem.close());
            auto nothing = ipc::receive_handle(socket, std::chrono::milliseconds(50));
            IPC_SIDE_EXPECT(!nothing.ok() && nothing.error().code() == KEEL_STATUS_UNAVAILABLE,
                            "receive_handle with nothing sent");
            return send_byte(socket);
        });
    expect_both_ok(result);
}

}  // namespace
}  // namespace keel
