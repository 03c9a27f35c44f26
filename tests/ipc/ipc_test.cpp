// Device memory and events shared between two processes on cpu:0 (keel.h
// 1.6): the scenarios every device runs (ipc_scenarios.cpp), and cpu:0's
// refusal of foreign, malformed and misused handles across two processes.
#include "ipc_scenarios.hpp"
#include "two_processes.hpp"

#include <keel/ipc.hpp>
#include <keel/keel.hpp>
#include <keel/testing/gate.hpp>
#include <keel/testing/result.hpp>

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

// The exporter's error text crosses in a fixed slot (447 bytes on cpu:0): a
// longer one arrives cut between two characters and says it was cut. Three
// texts, a byte apart, so that one of them has the slot's end inside a
// character whatever the plugin puts before it.
TEST(IpcEvent, AnExportersErrorTextLongerThanTheSlotArrivesCutAtACharacterWithAnEllipsis) {
    KEEL_ASSERT_OK_AND_ASSIGN(Runtime rt, Runtime::create());
    KEEL_ASSERT_OK_AND_ASSIGN(Device dev, rt.device("cpu:0"));
    for (const std::string pad : {"", "-", "--"}) {
        const std::string start = "planted long failure" + pad + " ";
        std::string text = start;
        for (int i = 0; i < 400; ++i) text += "\u2713";  // three bytes each
        text += " TAIL";
        KEEL_ASSERT_OK_AND_ASSIGN(Stream s, Stream::create(dev));
        KEEL_ASSERT_OK_AND_ASSIGN(Event ev, ipc::create_event(dev));
        testing::Gate gate;  // a failed stream refuses the record: fail after it
        KEEL_ASSERT_OK(gate.hold(s));
        KEEL_ASSERT_OK(s.enqueue_host_func([text]() -> Result<void> { return Error(KEEL_STATUS_OUT_OF_RANGE, text); }));
        KEEL_ASSERT_OK(ev.record(s));
        gate.open();
        KEEL_ASSERT_OK_AND_ASSIGN(ipc::Handle handle, ipc::export_event(ev));
        KEEL_ASSERT_OK_AND_ASSIGN(Event seen, ipc::import_event(dev, handle));
        auto synced = seen.synchronize();
        ASSERT_FALSE(synced.ok()) << "a record after the failure completed";
        const std::string& message = synced.error().message();
        const std::size_t at = message.find(start);
        ASSERT_NE(at, std::string::npos) << message;
        EXPECT_EQ(message.find("TAIL"), std::string::npos) << message;
        ASSERT_TRUE(message.ends_with("...")) << "cut without saying so: " << message;
        const std::string cut = message.substr(at + start.size(), message.size() - at - start.size() - 3);
        EXPECT_EQ(cut.size() % 3, 0u) << "cut inside a character: " << message;
        EXPECT_EQ(text.compare(start.size(), cut.size(), cut), 0) << message;
        EXPECT_GT(cut.size(), 300u) << "cut far shorter than the slot: " << message;
    }
}

}  // namespace
}  // namespace keel
