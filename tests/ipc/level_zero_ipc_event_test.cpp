// Events shared between two processes on level_zero:0, through the real
// Level Zero loader and the fake driver, whose IPC event pools keep their
// events' states in a memfd both processes map: the scenarios every device
// runs (ipc_scenarios.cpp), and what Level Zero's handles refuse.
#include "ipc_scenarios.hpp"

#include <keel/ipc.hpp>
#include <keel/keel.hpp>

#include <gtest/gtest.h>

#include <cstring>
#include <fcntl.h>
#include <future>
#include <string>
#include <unistd.h>

namespace keel::testing {
INSTANTIATE_TEST_SUITE_P(Devices, IpcEventAcrossProcesses, ::testing::Values("level_zero:0"), device_test_name);
}  // namespace keel::testing

namespace keel {
namespace {

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
