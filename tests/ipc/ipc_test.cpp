// Device memory and events shared between two processes on cpu:0 (keel.h
// 1.6): each test forks an exporter and an importer joined by a Unix socket.
#include "two_processes.hpp"

#include <keel/ipc.hpp>
#include <keel/keel.hpp>
#include <keel/testing/scoped_env.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <fcntl.h>
#include <future>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

namespace keel {
namespace {

using testing::expect_both_ok;
using testing::receive_byte;
using testing::run_two_processes;
using testing::send_byte;
using testing::ScopedEnv;

constexpr std::uint64_t kBytes = 1 << 20;

std::vector<std::uint8_t> pattern(std::uint8_t seed) { return testing::byte_pattern(kBytes, seed); }

std::string check_pattern(const std::vector<std::uint8_t>& got, std::uint8_t seed) {
    return testing::pattern_mismatch(got, kBytes, seed, "the importer reading the exporter's write");
}

TEST(IpcMemory, AnImporterReadsWhatTheExporterWroteAfterWaitingForTheSharedEvent) {
    // Every op held back 20 ms: a read not ordered by the event would come first.
    ScopedEnv env("KEEL_CPU_DELAY_US", "20000");
    auto result = run_two_processes(
        [](int socket) -> std::string {
            IPC_SIDE_ASSIGN(Runtime rt, Runtime::create());
            IPC_SIDE_ASSIGN(Device dev, rt.device("cpu:0"));
            IPC_SIDE_EXPECT(dev.has(DeviceCapability::ipc_memory) && dev.has(DeviceCapability::ipc_events),
                            "cpu:0 lacks the IPC capabilities");
            IPC_SIDE_ASSIGN(Stream s, Stream::create(dev));
            IPC_SIDE_ASSIGN(RawBuffer mem, ipc::allocate_exportable(dev, kBytes));
            IPC_SIDE_ASSIGN(Event written, ipc::create_event(dev));
            IPC_SIDE_OK(s.copy(mem.view(), pattern(3)));
            IPC_SIDE_OK(written.record(s));
            IPC_SIDE_ASSIGN(ipc::Handle mh, ipc::export_memory(mem));
            IPC_SIDE_ASSIGN(ipc::Handle eh, ipc::export_event(written));
            IPC_SIDE_OK(ipc::send_handle(socket, mh));
            IPC_SIDE_OK(ipc::send_handle(socket, eh));
            IPC_SIDE_STEP(receive_byte(socket));  // the importer read and closed it
            IPC_SIDE_OK(s.synchronize());
            return "";
        },
        [](int socket) -> std::string {
            IPC_SIDE_ASSIGN(Runtime rt, Runtime::create());
            IPC_SIDE_ASSIGN(Device dev, rt.device("cpu:0"));
            IPC_SIDE_ASSIGN(Stream s, Stream::create(dev));
            IPC_SIDE_ASSIGN(ipc::Handle mh, ipc::receive_handle(socket));
            IPC_SIDE_ASSIGN(ipc::Handle eh, ipc::receive_handle(socket));
            IPC_SIDE_EXPECT(mh.kind() == KEEL_IPC_HANDLE_MEMORY && mh.size() == kBytes, "a memory handle of 1 MiB");
            IPC_SIDE_ASSIGN(ipc::ImportedBuffer mem, ipc::import_memory(dev, mh));
            IPC_SIDE_ASSIGN(Event written, ipc::import_event(dev, eh));
            IPC_SIDE_OK(s.wait(written));
            IPC_SIDE_ASSIGN(auto future, s.copy_to_vector<std::uint8_t>(mem.view()));
            IPC_SIDE_ASSIGN(std::vector<std::uint8_t> got, std::move(future).get());
            IPC_SIDE_STEP(check_pattern(got, 3));
            IPC_SIDE_OK(mem.close());
            return send_byte(socket);
        });
    expect_both_ok(result);
}

TEST(IpcMemory, ImportedMemoryStaysValidAfterTheExporterFreedItAndExited) {
    auto result = run_two_processes(
        [](int socket) -> std::string {
            IPC_SIDE_ASSIGN(Runtime rt, Runtime::create());
            IPC_SIDE_ASSIGN(Device dev, rt.device("cpu:0"));
            IPC_SIDE_ASSIGN(Stream s, Stream::create(dev));
            IPC_SIDE_ASSIGN(RawBuffer mem, ipc::allocate_exportable(dev, kBytes));
            IPC_SIDE_OK(s.copy(mem.view(), pattern(9)));
            IPC_SIDE_OK(s.synchronize());
            IPC_SIDE_ASSIGN(ipc::Handle mh, ipc::export_memory(mem));
            IPC_SIDE_OK(ipc::send_handle(socket, mh));
            IPC_SIDE_STEP(receive_byte(socket));  // imported
            IPC_SIDE_OK(mem.free());
            // A new allocation must not take the shared bytes over.
            IPC_SIDE_ASSIGN(RawBuffer other, RawBuffer::allocate(dev, kBytes));
            IPC_SIDE_OK(s.memset(other.view(), 0xEE));
            IPC_SIDE_OK(s.synchronize());
            return "";  // exits: closes the socket
        },
        [](int socket) -> std::string {
            IPC_SIDE_ASSIGN(Runtime rt, Runtime::create());
            IPC_SIDE_ASSIGN(Device dev, rt.device("cpu:0"));
            IPC_SIDE_ASSIGN(Stream s, Stream::create(dev));
            IPC_SIDE_ASSIGN(ipc::Handle mh, ipc::receive_handle(socket));
            IPC_SIDE_ASSIGN(ipc::ImportedBuffer mem, ipc::import_memory(dev, mh));
            IPC_SIDE_STEP(send_byte(socket));
            char b = 0;
            IPC_SIDE_EXPECT(::read(socket, &b, 1) == 0, "the exporter sent something instead of exiting");
            IPC_SIDE_ASSIGN(auto future, s.copy_to_vector<std::uint8_t>(mem.view()));
            IPC_SIDE_ASSIGN(std::vector<std::uint8_t> got, std::move(future).get());
            return check_pattern(got, 9);
        });
    expect_both_ok(result);
}

TEST(IpcEvent, AWaitOnARecordMadeAfterTheExportersStreamFailedFailsWithItsError) {
    auto result = run_two_processes(
        [](int socket) -> std::string {
            IPC_SIDE_ASSIGN(Runtime rt, Runtime::create());
            IPC_SIDE_ASSIGN(Device dev, rt.device("cpu:0"));
            IPC_SIDE_ASSIGN(Stream s, Stream::create(dev));
            IPC_SIDE_ASSIGN(Event ev, ipc::create_event(dev));
            // The failure waits until the record is enqueued: a record on a
            // stream already failed is refused at the call.
            std::promise<void> recorded;
            IPC_SIDE_OK(s.enqueue_host_func([after = recorded.get_future().share()]() -> Result<void> {
                after.wait();
                return Error(KEEL_STATUS_UNAVAILABLE, "planted exporter failure 5150");
            }));
            IPC_SIDE_OK(ev.record(s));
            recorded.set_value();
            IPC_SIDE_ASSIGN(ipc::Handle eh, ipc::export_event(ev));
            IPC_SIDE_OK(ipc::send_handle(socket, eh));
            IPC_SIDE_STEP(receive_byte(socket));
            return "";
        },
        [](int socket) -> std::string {
            IPC_SIDE_ASSIGN(Runtime rt, Runtime::create());
            IPC_SIDE_ASSIGN(Device dev, rt.device("cpu:0"));
            IPC_SIDE_ASSIGN(Stream s, Stream::create(dev));
            IPC_SIDE_ASSIGN(ipc::Handle eh, ipc::receive_handle(socket));
            IPC_SIDE_ASSIGN(Event ev, ipc::import_event(dev, eh));
            auto synced = ev.synchronize();
            IPC_SIDE_EXPECT(!synced.ok(), "event_synchronize reported success after the exporter failed");
            IPC_SIDE_EXPECT(synced.error().message().find("planted exporter failure 5150") != std::string::npos,
                            synced.error().message());
            IPC_SIDE_OK(s.wait(ev));
            auto waited = s.synchronize();
            IPC_SIDE_EXPECT(!waited.ok(), "a stream that waited on the failed record reports success");
            IPC_SIDE_EXPECT(waited.error().message().find("planted exporter failure 5150") != std::string::npos,
                            waited.error().message());
            IPC_SIDE_EXPECT(!ev.record(s).ok(), "an importer recorded an imported event");
            return send_byte(socket);
        });
    expect_both_ok(result);
}

TEST(IpcEvent, AWaitForAnExporterThatExitedFailsInsteadOfHanging) {
    auto result = run_two_processes(
        [](int socket) -> std::string {
            IPC_SIDE_ASSIGN(Runtime rt, Runtime::create());
            IPC_SIDE_ASSIGN(Device dev, rt.device("cpu:0"));
            IPC_SIDE_ASSIGN(Stream s, Stream::create(dev));
            IPC_SIDE_ASSIGN(Event ev, ipc::create_event(dev));
            IPC_SIDE_OK(s.enqueue_host_func([] { std::this_thread::sleep_for(std::chrono::seconds(30)); }));
            IPC_SIDE_OK(ev.record(s));  // never completes: the process goes first
            IPC_SIDE_ASSIGN(ipc::Handle eh, ipc::export_event(ev));
            IPC_SIDE_OK(ipc::send_handle(socket, eh));
            IPC_SIDE_STEP(receive_byte(socket));
            ::_exit(0);  // dies with the record pending
        },
        [](int socket) -> std::string {
            IPC_SIDE_ASSIGN(Runtime rt, Runtime::create());
            IPC_SIDE_ASSIGN(Device dev, rt.device("cpu:0"));
            IPC_SIDE_ASSIGN(ipc::Handle eh, ipc::receive_handle(socket));
            IPC_SIDE_ASSIGN(Event ev, ipc::import_event(dev, eh));
            IPC_SIDE_ASSIGN(bool done, ev.query());
            IPC_SIDE_EXPECT(!done, "the pending record reads as complete");
            IPC_SIDE_STEP(send_byte(socket));
            const auto start = std::chrono::steady_clock::now();
            auto synced = ev.synchronize();
            const auto waited = std::chrono::steady_clock::now() - start;
            IPC_SIDE_EXPECT(!synced.ok() && synced.error().code() == KEEL_STATUS_UNAVAILABLE,
                            synced.ok() ? std::string("it succeeded") : synced.error().message());
            IPC_SIDE_EXPECT(waited < std::chrono::seconds(10), "it took more than 10 s to notice");
            return "";
        });
    expect_both_ok(result);
}

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
