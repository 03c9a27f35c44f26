// One CPU device (cpu:<index>) and everything it owns: its device memory
// (an address space of its own, whose addresses carry the device's tag),
// and the live streams and events (so plugin_shutdown can report and
// release what the caller leaked). Pinned memory, the checker and the id
// counters belong to the plugin and are shared by its devices (plugin.hpp):
// pinned memory serves copies of every device, and the checker orders the
// streams of every device in one model, so waits and copies across devices
// are checked like any other.
//
// Thread-safety: every member may be called from any thread.
#pragma once

#include "address_space.hpp"
#include "checker/checker.hpp"
#include "config.hpp"
#include "ipc/ipc_device.hpp"
#include "pinned_memory.hpp"
#include "sharded_owners.hpp"

#include <keel/keel.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

namespace keel::cpu {

class Stream;
class Event;

// Numbers that are unique across the plugin's devices (the checker keys
// streams and allocations by them).
struct IdCounters {
    std::atomic<std::uint64_t> allocations{0};
    std::atomic<std::uint64_t> streams{0};
};

class Device {
public:
    static constexpr std::uint32_t kMagic = 0x4B435055;  // "KCPU"

    Device(const Config& config, std::uint32_t index, PinnedMemory& pinned, IdCounters& ids);
    Device(const Device&) = delete;
    Device& operator=(const Device&) = delete;
    Device(Device&&) = delete;
    Device& operator=(Device&&) = delete;
    ~Device();

    [[nodiscard]] keel_device handle() noexcept { return reinterpret_cast<keel_device>(this); }
    [[nodiscard]] static Result<Device*> from(keel_device d);

    [[nodiscard]] const Config& config() const noexcept { return config_; }
    [[nodiscard]] std::uint32_t index() const noexcept { return memory_.device_index(); }
    [[nodiscard]] AddressSpace& memory() noexcept { return memory_; }
    // The plugin's pinned memory, shared by its devices.
    [[nodiscard]] PinnedMemory& pinned() noexcept { return pinned_; }
    // The plugin's checker; null when checker mode is off.
    [[nodiscard]] Checker* checker() noexcept { return checker_; }
    // Set once by the plugin, after every device exists and before any entry runs.
    void attach_checker(Checker* checker) noexcept {
        checker_ = checker;
        ipc_->memory.attach_checker(checker);
    }
    // Memory and events shared with other processes (keel.h 1.6).
    [[nodiscard]] ipc::IpcDevice& ipc() noexcept { return *ipc_; }
    [[nodiscard]] SpinWindow spin() const noexcept { return SpinWindow{config_.spin_us < 0 ? -1 : config_.spin_us * 1000}; }

    [[nodiscard]] std::uint64_t next_allocation_id() noexcept { return ++ids_.allocations; }

    [[nodiscard]] keel_device_properties properties() const;

    // Handles: the device owns every stream and event between create and destroy.
    [[nodiscard]] Result<Stream*> create_stream();
    [[nodiscard]] Result<void> destroy_stream(Stream* s);  // returns its sticky error
    [[nodiscard]] Result<Event*> create_event(std::uint32_t flags);
    void destroy_event(Event* e);

    // Memory entries with the checker's late-free detection around them.
    [[nodiscard]] Result<keel_device_addr> device_alloc(std::uint64_t size);
    [[nodiscard]] Result<void> device_free(keel_device_addr addr);
    [[nodiscard]] Result<void*> host_alloc(std::uint64_t size);
    [[nodiscard]] Result<void> host_free(void* ptr);

    // The leak report of plugin_shutdown ("" when nothing is live), after
    // which every live stream and event is released. `with_pinned`: the
    // report counts the plugin's pinned memory too (one device says it).
    [[nodiscard]] std::string release_everything(bool with_pinned);

private:
    std::uint32_t magic_ = kMagic;
    const Config config_;
    AddressSpace memory_;
    PinnedMemory& pinned_;
    IdCounters& ids_;
    Checker* checker_ = nullptr;

    std::mutex handles_mutex_;
    std::unordered_map<Stream*, std::unique_ptr<Stream>> streams_;
    // Events come and go at a high rate from many threads: no shared lock.
    ShardedOwners<Event> events_;
    // Last: its thread completes interprocess event records until it goes.
    std::unique_ptr<ipc::IpcDevice> ipc_;
};

}  // namespace keel::cpu
