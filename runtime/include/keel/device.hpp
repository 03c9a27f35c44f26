// Device: a cheap, copyable, shared reference to one device of a loaded plugin.
#pragma once

#include <keel/export.hpp>
#include <keel/keel.h>
#include <keel/memory_stats.hpp>
#include <keel/result.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>

namespace keel {

namespace detail {
struct Access;      // the runtime's own access to internals
struct DeviceSlot;  // one device of a loaded plugin (internal)
}  // namespace detail

class DeviceView;

// How Stream::copy moves bytes from memory of one device to memory of
// another (copy_path says which a pair takes).
enum class CopyPath {
    same_device,  // one device: a copy on the device
    peer,         // two devices of one plugin that copies between them (memcpy_peer)
    staged,       // any other pair: through pinned host memory, by the runtime
};

// Capability bits of keel_device_properties.capabilities, named for C++.
enum class DeviceCapability : std::uint32_t {
    host_addressable = KEEL_DEVICE_CAP_HOST_ADDRESSABLE,
    event_timing = KEEL_DEVICE_CAP_EVENT_TIMING,
    concurrent_streams = KEEL_DEVICE_CAP_CONCURRENT_STREAMS,
    pinned_memory = KEEL_DEVICE_CAP_PINNED_MEMORY,
    pinned_copies_only = KEEL_DEVICE_CAP_PINNED_COPIES_ONLY,  // honoured from ABI 1.3
    peer_copy = KEEL_DEVICE_CAP_PEER_COPY,                    // honoured from ABI 1.6
    peer_event_wait = KEEL_DEVICE_CAP_PEER_EVENT_WAIT,        // honoured from ABI 1.6
    ipc_memory = KEEL_DEVICE_CAP_IPC_MEMORY,                  // keel::ipc memory, from ABI 1.6
    ipc_events = KEEL_DEVICE_CAP_IPC_EVENTS,                  // keel::ipc events, from ABI 1.6
};

// What a plugin reports about a device, read once when the plugin loads.
struct DeviceProperties {
    std::string name;    // "NVIDIA H100 80GB HBM3", "Host CPU (8 cores)"
    std::string vendor;  // "NVIDIA"
    std::uint64_t total_memory = 0;
    std::uint32_t capabilities = 0;  // DeviceCapability bits
    std::uint32_t compute_units = 0;
    // Largest single allocation in bytes (the plugin's 0 is resolved to total_memory).
    std::uint64_t max_allocation = 0;
    // Alignment of every allocation, in bytes (a power of two).
    std::uint64_t alloc_alignment = 0;

    [[nodiscard]] bool has(DeviceCapability c) const noexcept {
        return (capabilities & static_cast<std::uint32_t>(c)) != 0;
    }
};

// The driver object behind a Device or Stream (a CUdevice, a cudaStream_t,
// a ze_device_handle_t, a Level Zero command list), for running a vendor
// library (cuBLAS, NCCL, oneDNN) on keel's device and streams. Owned by the
// plugin: never release it. Check `kind` before converting `value`.
struct NativeHandle {
    keel_native_handle_kind kind = KEEL_NATIVE_HANDLE_NONE;
    std::uint64_t value = 0;

    // `value` as the driver's type: as<cudaStream_t>(), as<int>().
    template <class T>
    [[nodiscard]] T as() const noexcept {
        if constexpr (std::is_pointer_v<T>)
            return reinterpret_cast<T>(static_cast<std::uintptr_t>(value));
        else
            return static_cast<T>(value);
    }
};

struct MemoryInfo {
    std::uint64_t free_bytes = 0;
    std::uint64_t total_bytes = 0;
};

// One device, named "<type>:<index>" ("cpu:0").
//
// A Device is a cheap shared reference (one std::shared_ptr): copying it
// copies the reference, never the device. It keeps the plugin that provides
// it loaded, as does every Stream, Event, buffer and Kernel made from it: the
// plugin's plugin_shutdown runs, and its library is unloaded, only when the
// last of these (and the Runtime) is gone, even if the Runtime goes first.
//
// A Device always refers to a device: it has no empty state, and moving one
// copies the reference (the source stays valid).
//
// Threads: every member is const and may be called from any thread at the
// same time; Devices may be copied to and used on any thread.
class KEEL_API Device {
public:
    Device(const Device&) = default;
    Device& operator=(const Device&) = default;
    // Moving copies, so that a moved-from Device still refers to its device.
    Device(Device&& other) noexcept : slot_(other.slot_) {}
    Device& operator=(Device&& other) noexcept {
        slot_ = other.slot_;
        return *this;
    }
    ~Device() = default;

    // "cpu:0"
    [[nodiscard]] const std::string& name() const noexcept;
    // "cpu"
    [[nodiscard]] const std::string& type() const noexcept;
    // 0 in "cpu:0"
    [[nodiscard]] std::uint32_t index() const noexcept;
    [[nodiscard]] const DeviceProperties& properties() const noexcept;
    [[nodiscard]] bool has(DeviceCapability c) const noexcept { return properties().has(c); }

    // Free and total memory now. UNIMPLEMENTED when the plugin lacks
    // device_memory_info.
    [[nodiscard]] Result<MemoryInfo> memory_info() const;

    // The driver's device behind this one (see NativeHandle). UNIMPLEMENTED
    // where there is none (the CPU plugin) or the plugin predates ABI 1.1.
    [[nodiscard]] Result<NativeHandle> native_handle() const;

    // What the plugin's staging of pageable host memory did on this device.
    // UNIMPLEMENTED where the plugin copies pageable memory directly (the
    // CPU plugin) or predates ABI 1.2.
    [[nodiscard]] Result<PageableStagingStats> pageable_staging_stats() const;

    friend bool operator==(const Device& a, const Device& b) noexcept { return a.slot_ == b.slot_; }

private:
    friend struct detail::Access;
    friend class DeviceView;
    friend struct std::hash<Device>;
    // Made by the runtime; holds the loaded plugin alive.
    explicit Device(std::shared_ptr<const detail::DeviceSlot> slot) noexcept
        : slot_(std::move(slot)) {}

    std::shared_ptr<const detail::DeviceSlot> slot_;
};

// Which path Stream::copy takes from memory of `src` to memory of `dst`.
[[nodiscard]] KEEL_API CopyPath copy_path(const Device& src, const Device& dst);

// Whether a stream of `waiter` waits for an event (or fence) of `source` on
// the device; otherwise the runtime bridges the wait with host functions
// (the enqueuing thread never blocks either way).
[[nodiscard]] KEEL_API bool waits_natively(const Device& waiter, const Device& source);

}  // namespace keel

template <>
struct std::hash<keel::Device> {
    std::size_t operator()(const keel::Device& d) const noexcept {
        return std::hash<const void*>()(d.slot_.get());
    }
};
