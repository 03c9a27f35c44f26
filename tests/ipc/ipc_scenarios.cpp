// Memory and events shared between two processes (keel.h 1.6), the same on
// every device that has both capabilities: each test forks an exporter and
// an importer joined by a Unix socket (two_processes.hpp), and runs once
// per device its executable instantiates it for (ipc_scenarios.hpp).
#include "ipc_scenarios.hpp"
#include "two_processes.hpp"

#include <keel/ipc.hpp>
#include <keel/keel.hpp>

#include <chrono>
#include <cstdint>
#include <future>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

namespace keel::testing {
namespace {

constexpr std::uint64_t kSharedBytes = 64 * 1024;

std::vector<std::uint8_t> shared_pattern(std::uint8_t seed) { return byte_pattern(kSharedBytes, seed); }

std::string shared_mismatch(const std::vector<std::uint8_t>& got, std::uint8_t seed, const char* when) {
    return pattern_mismatch(got, kSharedBytes, seed, when);
}

// Empty when `e` is the exporter's OUT_OF_RANGE failure and says `text`
// (and not `absent`).
std::string exporter_failure(const Error& e, const std::string& text, const std::string& absent = "") {
    if (e.code() != KEEL_STATUS_OUT_OF_RANGE) return "not OUT_OF_RANGE: " + e.message();
    for (const std::string& said : {std::string("after its stream failed: "), text})
        if (e.message().find(said) == std::string::npos) return "the error does not say '" + said + "': " + e.message();
    if (!absent.empty() && e.message().find(absent) != std::string::npos)
        return "the error says '" + absent + "': " + e.message();
    return "";
}

}  // namespace

TEST_P(IpcMemoryAcrossProcesses, WritesOfEitherProcessAreSeenByTheOtherAndOutliveTheExporter) {
    // Each side orders its writes by waiting for them on the host before it
    // says so over the socket (keel.h's ipc.memory-ordering).
    const std::string device = GetParam();
    auto result = run_two_processes(
        [device](int socket) -> std::string {
            IPC_SIDE_ASSIGN(Runtime rt, Runtime::create());
            IPC_SIDE_ASSIGN(Device dev, rt.device(device));
            IPC_SIDE_EXPECT(dev.has(DeviceCapability::ipc_memory), device + " lacks IPC_MEMORY");
            IPC_SIDE_ASSIGN(Stream s, Stream::create(dev));
            IPC_SIDE_ASSIGN(RawBuffer mem, ipc::allocate_exportable(dev, kSharedBytes));
            IPC_SIDE_OK(s.copy(mem.view(), shared_pattern(3)));
            IPC_SIDE_OK(s.synchronize());  // ordered before the handle leaves
            IPC_SIDE_ASSIGN(ipc::Handle mh, ipc::export_memory(mem));
            IPC_SIDE_EXPECT(mh.fd() >= 0, "the handle carries no descriptor");
            IPC_SIDE_OK(ipc::send_handle(socket, mh));
            IPC_SIDE_STEP(receive_byte(socket));  // the importer read ours and wrote its own
            IPC_SIDE_ASSIGN(auto future, s.copy_to_vector<std::uint8_t>(mem.view()));
            IPC_SIDE_ASSIGN(std::vector<std::uint8_t> got, std::move(future).get());
            IPC_SIDE_STEP(shared_mismatch(got, 5, "the exporter reading the importer's write"));
            IPC_SIDE_OK(mem.free());
            // New allocations, plain and exportable, must not take the shared bytes over.
            IPC_SIDE_ASSIGN(RawBuffer plain, RawBuffer::allocate(dev, kSharedBytes));
            IPC_SIDE_ASSIGN(RawBuffer exportable, ipc::allocate_exportable(dev, kSharedBytes));
            IPC_SIDE_OK(s.memset(plain.view(), 0xEE));
            IPC_SIDE_OK(s.memset(exportable.view(), 0xEE));
            IPC_SIDE_OK(s.synchronize());
            return send_byte(socket);  // then exits, closing the socket
        },
        [device](int socket) -> std::string {
            IPC_SIDE_ASSIGN(Runtime rt, Runtime::create());
            IPC_SIDE_ASSIGN(Device dev, rt.device(device));
            IPC_SIDE_ASSIGN(Stream s, Stream::create(dev));
            IPC_SIDE_ASSIGN(ipc::Handle mh, ipc::receive_handle(socket));
            IPC_SIDE_EXPECT(mh.kind() == KEEL_IPC_HANDLE_MEMORY && mh.size() == kSharedBytes,
                            "a memory handle of 64 KiB");
            IPC_SIDE_ASSIGN(ipc::ImportedBuffer mem, ipc::import_memory(dev, mh));
            IPC_SIDE_ASSIGN(auto future, s.copy_to_vector<std::uint8_t>(mem.view()));
            IPC_SIDE_ASSIGN(std::vector<std::uint8_t> got, std::move(future).get());
            IPC_SIDE_STEP(shared_mismatch(got, 3, "the importer reading the exporter's write"));
            IPC_SIDE_OK(s.copy(mem.view(), shared_pattern(5)));
            IPC_SIDE_OK(s.synchronize());
            IPC_SIDE_STEP(send_byte(socket));
            IPC_SIDE_STEP(receive_byte(socket));  // the exporter freed its allocation
            char b = 0;
            IPC_SIDE_EXPECT(::read(socket, &b, 1) == 0, "the exporter sent something instead of exiting");
            IPC_SIDE_ASSIGN(auto again, s.copy_to_vector<std::uint8_t>(mem.view()));
            IPC_SIDE_ASSIGN(std::vector<std::uint8_t> kept, std::move(again).get());
            IPC_SIDE_STEP(shared_mismatch(kept, 5, "after the exporter freed and exited"));
            IPC_SIDE_OK(mem.close());
            return "";
        });
    expect_both_ok(result);
}

TEST_P(IpcEventAcrossProcesses, AnImporterReadsWhatTheExporterWroteAfterWaitingForTheSharedEvent) {
    const std::string device = GetParam();
    auto result = run_two_processes(
        [device](int socket) -> std::string {
            IPC_SIDE_ASSIGN(Runtime rt, Runtime::create());
            IPC_SIDE_ASSIGN(Device dev, rt.device(device));
            IPC_SIDE_EXPECT(dev.has(DeviceCapability::ipc_memory) && dev.has(DeviceCapability::ipc_events),
                            device + " lacks the IPC capabilities");
            IPC_SIDE_ASSIGN(Stream s, Stream::create(dev));
            IPC_SIDE_ASSIGN(RawBuffer mem, ipc::allocate_exportable(dev, kSharedBytes));
            IPC_SIDE_ASSIGN(Event written, ipc::create_event(dev));
            // The writes wait until the importer has enqueued its wait and
            // its read: a read the event does not order comes first.
            IPC_SIDE_OK(s.enqueue_host_func([socket] { (void)receive_byte(socket); }));
            IPC_SIDE_OK(s.copy(mem.view(), shared_pattern(7)));
            IPC_SIDE_OK(written.record(s));
            IPC_SIDE_ASSIGN(ipc::Handle mh, ipc::export_memory(mem));
            IPC_SIDE_ASSIGN(ipc::Handle eh, ipc::export_event(written));
            IPC_SIDE_EXPECT(eh.kind() == KEEL_IPC_HANDLE_EVENT && eh.fd() >= 0, "an event handle with a descriptor");
            IPC_SIDE_OK(ipc::send_handle(socket, mh));
            IPC_SIDE_OK(ipc::send_handle(socket, eh));
            IPC_SIDE_OK(s.synchronize());         // the gate read the importer's byte
            IPC_SIDE_STEP(receive_byte(socket));  // the importer read and closed
            return "";
        },
        [device](int socket) -> std::string {
            IPC_SIDE_ASSIGN(Runtime rt, Runtime::create());
            IPC_SIDE_ASSIGN(Device dev, rt.device(device));
            IPC_SIDE_ASSIGN(Stream s, Stream::create(dev));
            IPC_SIDE_ASSIGN(ipc::Handle mh, ipc::receive_handle(socket));
            IPC_SIDE_ASSIGN(ipc::Handle eh, ipc::receive_handle(socket));
            IPC_SIDE_ASSIGN(ipc::ImportedBuffer mem, ipc::import_memory(dev, mh));
            IPC_SIDE_ASSIGN(Event written, ipc::import_event(dev, eh));
            IPC_SIDE_ASSIGN(bool early, written.query());
            IPC_SIDE_EXPECT(!early, "the record reads as complete while the exporter's stream is held");
            IPC_SIDE_OK(s.wait(written));
            IPC_SIDE_ASSIGN(auto future, s.copy_to_vector<std::uint8_t>(mem.view()));
            IPC_SIDE_STEP(send_byte(socket));  // releases the exporter's writes
            IPC_SIDE_ASSIGN(std::vector<std::uint8_t> got, std::move(future).get());
            IPC_SIDE_STEP(shared_mismatch(got, 7, "the importer reading the exporter's writes"));
            IPC_SIDE_OK(written.synchronize());
            IPC_SIDE_ASSIGN(bool done, written.query());
            IPC_SIDE_EXPECT(done, "the completed record reads as pending");
            IPC_SIDE_OK(mem.close());
            return send_byte(socket);
        });
    expect_both_ok(result);
}

TEST_P(IpcEventAcrossProcesses, AWaitOnARecordMadeAfterTheExportersStreamFailedFailsWithItsError) {
    const std::string device = GetParam();
    // The second stream fails with a message longer than what crosses: the
    // importer gets its beginning, cut, never more.
    const std::string long_message = "planted long failure " + std::string(4000, 'x') + " TAIL";
    auto result = run_two_processes(
        [device, &long_message](int socket) -> std::string {
            IPC_SIDE_ASSIGN(Runtime rt, Runtime::create());
            IPC_SIDE_ASSIGN(Device dev, rt.device(device));
            IPC_SIDE_ASSIGN(Stream s, Stream::create(dev));
            IPC_SIDE_ASSIGN(Stream s2, Stream::create(dev));
            IPC_SIDE_ASSIGN(Event ev, ipc::create_event(dev));
            IPC_SIDE_ASSIGN(Event long_ev, ipc::create_event(dev));
            // The failures wait until the records are enqueued: a record on
            // a stream already failed is refused at the call.
            std::promise<void> recorded;
            auto after = recorded.get_future().share();
            IPC_SIDE_OK(s.enqueue_host_func([after]() -> Result<void> {
                after.wait();
                return Error(KEEL_STATUS_OUT_OF_RANGE, "planted exporter failure 5150");
            }));
            IPC_SIDE_OK(s2.enqueue_host_func([after, &long_message]() -> Result<void> {
                after.wait();
                return Error(KEEL_STATUS_OUT_OF_RANGE, long_message);
            }));
            IPC_SIDE_OK(ev.record(s));
            IPC_SIDE_OK(long_ev.record(s2));
            recorded.set_value();
            IPC_SIDE_ASSIGN(ipc::Handle eh, ipc::export_event(ev));
            IPC_SIDE_ASSIGN(ipc::Handle long_eh, ipc::export_event(long_ev));
            IPC_SIDE_OK(ipc::send_handle(socket, eh));
            IPC_SIDE_OK(ipc::send_handle(socket, long_eh));
            IPC_SIDE_STEP(receive_byte(socket));
            return "";
        },
        [device](int socket) -> std::string {
            IPC_SIDE_ASSIGN(Runtime rt, Runtime::create());
            IPC_SIDE_ASSIGN(Device dev, rt.device(device));
            IPC_SIDE_ASSIGN(Stream s, Stream::create(dev));
            IPC_SIDE_ASSIGN(ipc::Handle eh, ipc::receive_handle(socket));
            IPC_SIDE_ASSIGN(ipc::Handle long_eh, ipc::receive_handle(socket));
            IPC_SIDE_ASSIGN(Event ev, ipc::import_event(dev, eh));
            IPC_SIDE_ASSIGN(Event long_ev, ipc::import_event(dev, long_eh));
            // The exporter's own text, through every way of asking.
            const std::string text = "planted exporter failure 5150";
            auto synced = ev.synchronize();
            IPC_SIDE_EXPECT(!synced.ok(), "event_synchronize reported success after the exporter failed");
            IPC_SIDE_STEP(exporter_failure(synced.error(), text));
            auto queried = ev.query();
            IPC_SIDE_EXPECT(!queried.ok(), "event_query reported success after the exporter failed");
            IPC_SIDE_STEP(exporter_failure(queried.error(), text));
            IPC_SIDE_OK(s.wait(ev));
            auto waited = s.synchronize();
            IPC_SIDE_EXPECT(!waited.ok(), "a stream that waited on the failed record reports success");
            IPC_SIDE_STEP(exporter_failure(waited.error(), text));
            IPC_SIDE_EXPECT(!ev.record(s).ok(), "an importer recorded an imported event");
            // A message longer than the plugin's bound arrives cut, with its start.
            auto cut = long_ev.synchronize();
            IPC_SIDE_EXPECT(!cut.ok(), "event_synchronize reported success after the exporter failed");
            IPC_SIDE_STEP(exporter_failure(cut.error(), "planted long failure xxx", "TAIL"));
            IPC_SIDE_EXPECT(cut.error().message().size() < 1000,
                            "not cut to a bounded length: " + std::to_string(cut.error().message().size()) + " bytes");
            return send_byte(socket);
        });
    expect_both_ok(result);
}

TEST_P(IpcEventAcrossProcesses, AWaitForAnExporterThatExitedFailsInsteadOfHanging) {
    const std::string device = GetParam();
    auto result = run_two_processes(
        [device](int socket) -> std::string {
            IPC_SIDE_ASSIGN(Runtime rt, Runtime::create());
            IPC_SIDE_ASSIGN(Device dev, rt.device(device));
            IPC_SIDE_ASSIGN(Stream s, Stream::create(dev));
            IPC_SIDE_ASSIGN(Event ev, ipc::create_event(dev));
            IPC_SIDE_OK(s.enqueue_host_func([] { std::this_thread::sleep_for(std::chrono::seconds(30)); }));
            IPC_SIDE_OK(ev.record(s));  // never completes: the process goes first
            IPC_SIDE_ASSIGN(ipc::Handle eh, ipc::export_event(ev));
            IPC_SIDE_OK(ipc::send_handle(socket, eh));
            IPC_SIDE_STEP(receive_byte(socket));
            ::_exit(0);  // dies with the record pending
        },
        [device](int socket) -> std::string {
            IPC_SIDE_ASSIGN(Runtime rt, Runtime::create());
            IPC_SIDE_ASSIGN(Device dev, rt.device(device));
            IPC_SIDE_ASSIGN(Stream s, Stream::create(dev));
            IPC_SIDE_ASSIGN(ipc::Handle eh, ipc::receive_handle(socket));
            IPC_SIDE_ASSIGN(Event ev, ipc::import_event(dev, eh));
            IPC_SIDE_ASSIGN(bool done, ev.query());
            IPC_SIDE_EXPECT(!done, "the pending record reads as complete");
            IPC_SIDE_OK(s.wait(ev));
            IPC_SIDE_STEP(send_byte(socket));
            const auto start = std::chrono::steady_clock::now();
            auto synced = ev.synchronize();
            IPC_SIDE_EXPECT(!synced.ok() && synced.error().code() == KEEL_STATUS_UNAVAILABLE,
                            synced.ok() ? std::string("it succeeded") : synced.error().message());
            auto stream = s.synchronize();
            IPC_SIDE_EXPECT(!stream.ok() && stream.error().code() == KEEL_STATUS_UNAVAILABLE,
                            stream.ok() ? std::string("the waiting stream succeeded") : stream.error().message());
            IPC_SIDE_EXPECT(std::chrono::steady_clock::now() - start < std::chrono::seconds(10),
                            "it took more than 10 s to notice");
            return "";
        });
    expect_both_ok(result);
}

}  // namespace keel::testing
