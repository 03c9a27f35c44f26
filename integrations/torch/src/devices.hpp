// The keel devices behind privateuseone:N and the streams PyTorch uses on
// them. No torch header here: this is plain keel, shared by the allocator,
// the device guard and the kernels.
#pragma once

#include <keel/keel.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <vector>

namespace keel_torch {

// The device names of KEEL_TORCH_DEVICES (comma-separated keel names),
// "cpu:0" when unset or empty. privateuseone:N is the N-th.
[[nodiscard]] std::vector<std::string> configured_device_names();

// The calling thread's current stream id on privateuseone:index (0, the
// default stream, until set). Needs no device: the guard asks in noexcept
// members.
[[nodiscard]] std::int64_t current_stream_id(int index) noexcept;
void set_current_stream_id(int index, std::int64_t id) noexcept;
// The calling thread's current device index (0 until set).
[[nodiscard]] int current_device_index() noexcept;
void set_current_device_index(int index) noexcept;

// Side streams per device: a Stream() object of keel_torch takes one of
// these, so that many objects do not mean many device queues (or, on the
// CPU device, many worker threads).
inline constexpr std::int64_t stream_pool_size = 8;

// One privateuseone index: its keel device and its streams. Stream ids are
// indices into a list that only grows (0 is the default stream), so a
// c10::Stream can carry one and a stream never goes while PyTorch may still
// name it. Sync: every member may be called from any thread.
class TorchDevice {
public:
    TorchDevice(int index, keel::Device device) : index_(index), device_(std::move(device)) {}

    [[nodiscard]] int index() const noexcept { return index_; }
    [[nodiscard]] const keel::Device& device() const noexcept { return device_; }

    // The stream with this id (non-owning: it lives as long as the process).
    [[nodiscard]] keel::Result<const keel::Stream*> stream(std::int64_t id) const;
    // A side stream from the device's pool (stream_pool_size streams, made
    // on first use, then handed out round-robin, as CUDA's pool does): its id.
    [[nodiscard]] keel::Result<std::int64_t> pooled_stream() const;
    // A stream of its own, outside the pool (a communication stream that
    // must not queue behind users' side streams): its id.
    [[nodiscard]] keel::Result<std::int64_t> dedicated_stream() const;
    [[nodiscard]] std::int64_t stream_count() const;

    // The calling thread's current stream on this device.
    [[nodiscard]] keel::Result<const keel::Stream*> current_stream() const;

    // The device's kernel of this name, found once (NOT_FOUND when it has none).
    [[nodiscard]] keel::Result<keel::Kernel> kernel(const std::string& name) const;

    // The device's shared memory instance (the allocator's statistics).
    [[nodiscard]] keel::Result<keel::MemoryPool> memory() const { return keel::MemoryPool::shared(device_); }

    // The way on after a device fault. Waits for every stream of the device;
    // each one that failed is replaced by a fresh stream under the same id
    // (what PyTorch's c10::Streams name keeps working), and, when any had
    // failed, a new data generation starts: memory allocated before it holds
    // data that failed work may not have written (data_generation()).
    // Returns the faults of the streams replaced (empty: nothing failed,
    // nothing changed). The failed streams are kept, never destroyed, so a
    // pointer another thread took from stream() stays valid (its work fails).
    [[nodiscard]] keel::Result<std::vector<keel::Error>> recover() const;
    // recover() waits for every DeviceUse of the device to end and holds
    // new ones back until it returns, so that no operation checks a
    // tensor's data before it and enqueues on a replaced stream after it.
    // FAILED_PRECONDITION when the calling thread itself holds a DeviceUse.
    // Starts at 0; recover() adds one for each fault it clears.
    [[nodiscard]] std::uint64_t data_generation() const noexcept {
        return generation_.load(std::memory_order_acquire);
    }

private:
    friend class DeviceUse;
    int index_;
    keel::Device device_;
    mutable std::shared_mutex use_mutex_;  // shared: DeviceUse; exclusive: recover()
    mutable std::mutex mutex_;
    mutable std::vector<std::unique_ptr<keel::Stream>> streams_;
    mutable std::vector<std::unique_ptr<keel::Stream>> failed_streams_;  // replaced by recover(), kept
    mutable std::atomic<std::uint64_t> generation_{0};
    mutable std::map<std::string, keel::Kernel, std::less<>> kernels_;
    mutable std::vector<std::int64_t> pool_ids_;
    mutable std::int64_t next_pooled_ = 0;

    [[nodiscard]] keel::Result<std::int64_t> add_stream_locked() const;
};

// One operation's use of a device, from its first check of a tensor's data
// to its last enqueue: recover() waits for it to end. Nested uses of one
// device on one thread (an operation calling others) hold it once.
// Neither copyable nor movable; ends on the thread that began it.
class DeviceUse {
public:
    explicit DeviceUse(const TorchDevice& device);
    DeviceUse(const DeviceUse&) = delete;
    DeviceUse& operator=(const DeviceUse&) = delete;
    ~DeviceUse();

    // How many DeviceUses of this device the calling thread holds.
    [[nodiscard]] static int held(const TorchDevice& device) noexcept;

private:
    const TorchDevice& device_;
};

// Every privateuseone device, made at the first call (which loads keel's
// plugins) and kept until the process exits. The pointers returned are
// non-owning views of that process-wide set. Sync: immutable once made
// (each TorchDevice guards its own lists).
class Devices {
public:
    // The set, or why it could not be made (a name that does not exist:
    // the message lists those that do).
    [[nodiscard]] static keel::Result<const Devices*> get();
    // How many indices KEEL_TORCH_DEVICES names, without loading keel.
    [[nodiscard]] static int configured_count() noexcept;

    [[nodiscard]] int count() const noexcept { return static_cast<int>(devices_.size()); }
    // INVALID_ARGUMENT for an index outside [0, count()).
    [[nodiscard]] keel::Result<const TorchDevice*> at(std::int64_t index) const;

private:
    keel::Runtime runtime_;
    std::vector<std::unique_ptr<TorchDevice>> devices_;

    explicit Devices(keel::Runtime runtime) : runtime_(std::move(runtime)) {}
    [[nodiscard]] static keel::Result<std::unique_ptr<Devices>> make();
};

}  // namespace keel_torch
