// Events shared between two processes on level_zero:0, through the real
// Level Zero loader and the fake driver, whose IPC event pools keep their
// events' states in a memfd both processes map: the cases tests/ipc runs
// on cpu:0, with the differences Level Zero has (an exporter's failure
// crosses through the bits of the pool's events, its message bounded).
#include "two_processes.hpp"

#include <keel/ipc.hpp>
#include <keel/keel.hpp>

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

constexpr std::uint64_t kEventBytes = 64 * 1024;

std::vector<std::uint8_t> event_pattern(std::uint8_t seed) { return testing::byte_pattern(kEventBytes, seed); }

std::string event_check_pattern(const std::vector<std::uint8_t>& got, std::uint8_t seed) {
    return testing::pattern_mismatch(got, kEventBytes, seed, "the importer reading the exporter's writes");
}

TEST(LevelZeroIpcEvent, AnImporterReadsWhatTheExporterWroteAfterWaitingForTheSharedEvent) {
    auto result = run_two_processes(
        [](int socket) -> std::string {
            IPC_SIDE_ASSIGN(Runtime rt, Runtime::create());
            IPC_SIDE_ASSIGN(Device dev, rt.device("level_zero:0"));
            IPC_SIDE_EXPECT(dev.has(DeviceCapability::ipc_memory) && dev.has(DeviceCapability::ipc_events),
                            "level_zero:0 lacks the IPC capabilities");
            IPC_SIDE_ASSIGN(Stream s, Stream::create(dev));
            IPC_SIDE_ASSIGN(RawBuffer mem, ipc::allocate_exportable(dev, kEventBytes));
            IPC_SIDE_ASSIGN(Event written, ipc::create_event(dev));
            // The writes wait until the importer has enqueued its wait and
            // its read: a read the event does not order comes first.
            IPC_SIDE_OK(s.enqueue_host_func([socket] { (void)receive_byte(socket); }));
            IPC_SIDE_OK(s.copy(mem.view(), event_pattern(7)));
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
        [](int socket) -> std::string {
            IPC_SIDE_ASSIGN(Runtime rt, Runtime::create());
            IPC_SIDE_ASSIGN(Device dev, rt.device("level_zero:0"));
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
            IPC_SIDE_STEP(event_check_pattern(got, 7));
            IPC_SIDE_OK(written.synchronize());
            IPC_SIDE_ASSIGN(bool done, written.query());
            IPC_SIDE_EXPECT(done, "the completed record reads as pending");
            IPC_SIDE_OK(mem.close());
            return send_byte(socket);
        });
    expect_both_ok(result);
}

// Empty when `e` is the exporter's failure, with its code and its `text`
// (and not `absent`).
std::string failed_with(const Error& e, const std::string& text, const std::string& absent = "") {
    if (e.code() != KEEL_STATUS_OUT_OF_RANGE) return "not OUT_OF_RANGE: " + e.message();
    for (const std::string& said : {std::string("after its stream failed: "), text})
        if (e.message().find(said) == std::string::npos) return "the error does not say '" + said + "': " + e.message();
    if (!absent.empty() && e.message().find(absent) != std::string::npos)
        return "the error says '" + absent + "': " + e.message();
    return "";
}

TEST(LevelZeroIpcEvent, AWaitOnARecordMadeAfterTheExportersStreamFailedFailsWithItsError) {
    // The second stream fails with a message longer than what crosses: the
    // importer gets its beginning, cut, never more.
    const std::string long_message = "planted long failure " + std::string(4000, 'x') + " TAIL";
    auto result = run_two_processes(
        [&long_message](int socket) -> std::string {
            IPC_SIDE_ASSIGN(Runtime rt, Runtime::create());
            IPC_SIDE_ASSIGN(Device dev, rt.device("level_zero:0"));
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
        [](int socket) -> std::string {
            IPC_SIDE_ASSIGN(Runtime rt, Runtime::create());
            IPC_SIDE_ASSIGN(Device dev, rt.device("level_zero:0"));
            IPC_SIDE_ASSIGN(Stream s, Stream::create(dev));
            IPC_SIDE_ASSIGN(ipc::Handle eh, ipc::receive_handle(socket));
            IPC_SIDE_ASSIGN(ipc::Handle long_eh, ipc::receive_handle(socket));
            IPC_SIDE_ASSIGN(Event ev, ipc::import_event(dev, eh));
            IPC_SIDE_ASSIGN(Event long_ev, ipc::import_event(dev, long_eh));
            // The exporter's own text, through every way of asking.
            const std::string text = "planted exporter failure 5150 (OUT_OF_RANGE)";
            auto synced = ev.synchronize();
            IPC_SIDE_EXPECT(!synced.ok(), "event_synchronize reported success after the exporter failed");
            IPC_SIDE_STEP(failed_with(synced.error(), text));
            auto queried = ev.query();
            IPC_SIDE_EXPECT(!queried.ok(), "event_query reported success after the exporter failed");
            IPC_SIDE_STEP(failed_with(queried.error(), text));
            IPC_SIDE_OK(s.wait(ev));
            auto waited = s.synchronize();
            IPC_SIDE_EXPECT(!waited.ok(), "a stream that waited on the failed record reports success");
            IPC_SIDE_STEP(failed_with(waited.error(), text));
            IPC_SIDE_EXPECT(!ev.record(s).ok(), "an importer recorded an imported event");
            // A message longer than the bound arrives cut, with its start.
            auto cut = long_ev.synchronize();
            IPC_SIDE_EXPECT(!cut.ok(), "event_synchronize reported success after the exporter failed");
            IPC_SIDE_STEP(failed_with(cut.error(), "planted long failure xxx", "TAIL"));
            IPC_SIDE_EXPECT(cut.error().message().find("xxx... (OUT_OF_RANGE)") != std::string::npos &&
                                cut.error().message().size() < 400,
                            "not cut with an ellipsis to a bounded length: " + cut.error().message());
            return send_byte(socket);
        });
    expect_both_ok(result);
}

TEST(LevelZeroIpcEvent, AWaitForAnExporterThatExitedFailsInsteadOfHanging) {
    auto result = run_two_processes(
        [](int socket) -> std::string {
            IPC_SIDE_ASSIGN(Runtime rt, Runtime::create());
            IPC_SIDE_ASSIGN(Device dev, rt.device("level_zero:0"));
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
            IPC_SIDE_ASSIGN(Device dev, rt.device("level_zero:0"));
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

TEST(LevelZeroIpcEvent, ForeignMalformedAndMisusedHandlesAreRefused) {
    // One process: the fake driver opens an event pool handle in the
    // process that exported it, as it does memory handles.
    auto rt = Runtime::create();
    ASSERT_TRUE(rt.ok()) << rt.error().message();
    auto dev_r = rt->device("level_zero:0");
    ASSERT_TRUE(dev_r.ok()) << dev_r.error().message();
    const Device& dev = *dev_r;
    const auto refused = [](const auto& r, const char* what) {
        ASSERT_FALSE(r.ok()) << what << " was accepted";
        EXPECT_EQ(r.error().code(), KEEL_STATUS_INVALID_ARGUMENT) << what << ": " << r.error().message();
    };
    auto plain = Event::create(dev);
    ASSERT_TRUE(plain.ok());
    refused(ipc::export_event(*plain), "exporting an event of Event::create");
    auto ev = ipc::create_event(dev);
    ASSERT_TRUE(ev.ok()) << ev.error().message();
    auto exported = ipc::export_event(*ev);
    ASSERT_TRUE(exported.ok()) << exported.error().message();
    const keel_ipc_handle& good = exported->c_handle();
    auto mem = ipc::allocate_exportable(dev, 4096);
    ASSERT_TRUE(mem.ok());
    auto mh = ipc::export_memory(*mem);
    ASSERT_TRUE(mh.ok());

    refused(ipc::import_event(dev, *mh), "a memory handle imported as an event");
    refused(ipc::import_memory(dev, *exported), "an event handle imported as memory");
    keel_ipc_handle no_fd = good;
    no_fd.fd = -1;
    refused(ipc::import_event(dev, ipc::Handle::adopt(no_fd)), "a handle without its descriptor");
    keel_ipc_handle other_file = good;
    other_file.fd = ::open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
    refused(ipc::import_event(dev, ipc::Handle::adopt(other_file)), "a handle with another file's descriptor");
    keel_ipc_handle memory_fd = good;
    memory_fd.fd = ::dup(mh->fd());
    refused(ipc::import_event(dev, ipc::Handle::adopt(memory_fd)), "a handle with shared memory's descriptor");
    keel_ipc_handle changed = good;
    changed.fd = ::dup(good.fd);
    changed.bytes[5] ^= 0xFF;
    refused(ipc::import_event(dev, ipc::Handle::adopt(changed)), "a handle with changed bytes");
    keel_ipc_handle no_process = good;
    no_process.fd = ::dup(good.fd);
    std::memset(no_process.bytes, 0, 4);
    refused(ipc::import_event(dev, ipc::Handle::adopt(no_process)), "a handle naming no exporting process");
    keel_ipc_handle short_bytes = good;
    short_bytes.fd = ::dup(good.fd);
    short_bytes.byte_count = 16;
    refused(ipc::import_event(dev, ipc::Handle::adopt(short_bytes)), "a handle of another plugin's length");
    keel_ipc_handle sized = good;
    sized.fd = ::dup(good.fd);
    sized.size = 4096;
    refused(ipc::import_event(dev, ipc::Handle::adopt(sized)), "an event handle with a memory size");
    // Another plugin's event handle (cpu:0 shares events through its own files).
    if (auto cpu = rt->device("cpu:0"); cpu.ok() && cpu->has(DeviceCapability::ipc_events)) {
        auto theirs = ipc::create_event(*cpu);
        ASSERT_TRUE(theirs.ok());
        auto th = ipc::export_event(*theirs);
        ASSERT_TRUE(th.ok());
        refused(ipc::import_event(dev, *th), "cpu:0's event handle on level_zero:0");
    }

    // An imported event is only waited for: the exporter records it.
    auto s = Stream::create(dev);
    ASSERT_TRUE(s.ok());
    auto seen = ipc::import_event(dev, *exported);
    ASSERT_TRUE(seen.ok()) << seen.error().message();
    refused(seen->record(*s), "recording an imported event");
    refused(ipc::export_event(*seen), "exporting an imported event");
    auto never = seen->query();
    ASSERT_TRUE(never.ok()) << never.error().message();
    EXPECT_TRUE(*never) << "an event never recorded reads as pending";

    // The importer sees the most recent record as made when it asks: a new
    // record is pending at once, even though the previous one completed.
    for (int round = 0; round < 2; ++round) {
        std::promise<void> gate;
        ASSERT_TRUE(s->enqueue_host_func([held = gate.get_future().share()] { held.wait(); }).ok());
        ASSERT_TRUE(ev->record(*s).ok());
        auto pending = seen->query();
        ASSERT_TRUE(pending.ok()) << pending.error().message();
        EXPECT_FALSE(*pending) << "round " << round << ": a held record reads as complete";
        gate.set_value();
        auto synced = seen->synchronize();
        EXPECT_TRUE(synced.ok()) << synced.error().message();
        auto done = seen->query();
        ASSERT_TRUE(done.ok());
        EXPECT_TRUE(*done) << "round " << round;
    }
    EXPECT_TRUE(s->synchronize().ok());
}

}  // namespace
}  // namespace keel
