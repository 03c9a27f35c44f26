// The one CPU device (cpu:0) and everything it owns: device memory, pinned
// memory, the checker (when on), and the live streams and events (so
// plugin_shutdown can report and release what the caller leaked).
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

class Device {
public:
    static constexpr std::uint32_t kMagic = 0x4B435055;  // "KCPU"

    explicit Device(const Config& config);
    Device(const Device&) = delete;
    Device& operator=(const Device&) = delete;
    Device(Device&&) = delete;
    Device& operator=(Device&&) = delete;
    ~Device();

    [[nodiscard]] keel_device handle() noexcept { return reinterpret_cast<keel_device>(this); }
    [[nodiscard]] static Result<Device*> from(keel_device d);

    [[nodiscard]] const Config& config() const noexcept { return config_; }
    [[nodiscard]] AddressSpace& memory() noexcept { return memory_; }
    [[nodiscard]] PinnedMemory& pinned() noexcept { return pinned_; }
    // Null when checker mode is off.
    [[nodiscard]] Checker* checker() noexcept { return checker_.get(); }
    // Memory and events shared with other processes (keel.h 1.6).
    [[nodiscard]] ipc::IpcDevice& ipc() noexcept { return *ipc_; }
    [[nodiscard]] SpinWindow spin() const noexcept { return SpinWindow{config_.spin_us < 0 ? -1 : config_.spin_us * 1000}; }

    [[nodiscard]] std::uint64_t next_allocation_id() noexcept { return ++allocation_ids_; }

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
    // which every live stream and event is released.
    [[nodiscard]] std::string release_everything();

private:
    std::uint32_t magic_ = kMagic;
    const Config config_;
    AddressSpace memory_;
    PinnedMemory pinned_;
    std::unique_ptr<Checker> checker_;
    std::atomic<std::uint64_t> allocation_ids_{0};
    std::atomic<std::uint64_t> stream_ids_{0};

    std::mutex handles_mutex_;
    std::unordered_map<Stream*, std::unique_ptr<Stream>> streams_;
    // Events come and go at a high rate from many threads: no shared lock.
    ShardedOwners<Event> events_;
    // Last: its thread completes interprocess event records until it goes.
    std::unique_ptr<ipc::IpcDevice> ipc_;
};

}  // namespace keel::cpu
