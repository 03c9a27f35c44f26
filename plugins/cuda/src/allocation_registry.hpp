// The live allocations of one device (device memory, and separately pinned
// host memory), so that every copy, memset and kernel buffer is checked
// against them before it reaches the GPU. Without
// the check a bad address is not an error at the call: it becomes an
// asynchronous illegal-address fault that destroys the whole CUDA context.
#pragma once

#include <keel/keel.h>
#include <keel/plugin/copy_args.hpp>
#include <keel/result.hpp>

#include <atomic>
#include <optional>
#include <cstdint>
#include <shared_mutex>
#include <string>
#include <utility>
#include <vector>

namespace keel::cuda {

// Thread-safe: every member may be called from any thread. add/remove take
// the lock exclusively. Checks run on every enqueue: a thread first looks in
// its own few last hits (valid while no allocation was removed since: one
// atomic load, no lock), then under the shared lock.
class AllocationRegistry {
public:
    // `kind` names what is registered in error messages ("device allocation of cuda:0").
    explicit AllocationRegistry(std::string kind);
    AllocationRegistry(const AllocationRegistry&) = delete;
    AllocationRegistry& operator=(const AllocationRegistry&) = delete;
    AllocationRegistry(AllocationRegistry&&) = delete;
    AllocationRegistry& operator=(AllocationRegistry&&) = delete;
    ~AllocationRegistry() = default;

    void add(keel_device_addr base, std::uint64_t size);

    // Forgets the allocation starting exactly at `base`; INVALID_ARGUMENT
    // when there is none (a double free, or an address inside one).
    Result<void> remove(keel_device_addr base);

    // Ok when [addr, addr + size) lies inside one allocation. INVALID_ARGUMENT
    // when `addr` is in none, OUT_OF_RANGE when the range runs past the end
    // of the allocation holding `addr`. `role` names the operand in the
    // message ("destination").
    Result<void> check(keel_device_addr addr, std::uint64_t size, const char* role) const;

    // Size of the allocation starting exactly at `base`, if there is one.
    [[nodiscard]] std::optional<std::uint64_t> size_at(keel_device_addr base) const;

    // Like check(), as a cheap yes/no (no message built on a miss).
    [[nodiscard]] bool contains(keel_device_addr addr, std::uint64_t size) const noexcept;

    // Removes and returns every allocation (at shutdown, to free leftovers).
    std::vector<std::pair<keel_device_addr, std::uint64_t>> take_all();

private:
    const std::string kind_;
    // Tells this registry apart in the threads' hit caches (never reused,
    // unlike an address).
    const std::uint64_t id_;
    // Bumped by every change that can end an allocation: a cached hit is
    // valid while it is unchanged.
    std::atomic<std::uint64_t> generation_{0};
    [[nodiscard]] bool cached(keel_device_addr addr, std::uint64_t size) const noexcept;
    void remember(keel_device_addr base, std::uint64_t size) const noexcept;
    // The allocation holding `addr`, or end(). Caller holds the lock.
    [[nodiscard]] std::vector<std::pair<keel_device_addr, std::uint64_t>>::const_iterator holding(
        keel_device_addr addr) const noexcept;

    mutable std::shared_mutex mutex_;
    // (base, size) sorted by base: lookups, on every enqueue, are a binary
    // search over contiguous memory; add/remove, rare, shift the tail.
    std::vector<std::pair<keel_device_addr, std::uint64_t>> live_;
};

using plugin::hex_addr;

}  // namespace keel::cuda
