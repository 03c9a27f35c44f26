// Which addresses of a device take part in memory IPC: allocations of
// ipc_memory_alloc (the only ones ipc_memory_export exports, on every
// driver alike) and imports (closed with ipc_memory_close, never freed).
// Thread-safe.
#pragma once

#include <keel/keel.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <set>

namespace keel::level_zero {

class IpcAddresses {
public:
    void add_exportable(keel_device_addr addr, std::uint64_t size) {
        std::lock_guard lock(mutex_);
        exportable_[addr] = size;
    }
    // Its size when `addr` is the base of a live ipc_memory_alloc allocation.
    [[nodiscard]] std::optional<std::uint64_t> exportable_size(keel_device_addr addr) const {
        std::lock_guard lock(mutex_);
        const auto it = exportable_.find(addr);
        if (it == exportable_.end()) return std::nullopt;
        return it->second;
    }
    void forget_exportable(keel_device_addr addr) {
        std::lock_guard lock(mutex_);
        exportable_.erase(addr);
    }

    void add_imported(keel_device_addr addr) {
        std::lock_guard lock(mutex_);
        imported_.insert(addr);
    }
    [[nodiscard]] bool imported(keel_device_addr addr) const {
        std::lock_guard lock(mutex_);
        return imported_.count(addr) != 0;
    }
    // False when `addr` is not an import.
    [[nodiscard]] bool remove_imported(keel_device_addr addr) {
        std::lock_guard lock(mutex_);
        return imported_.erase(addr) != 0;
    }

private:
    mutable std::mutex mutex_;
    std::map<keel_device_addr, std::uint64_t> exportable_;  // guarded by mutex_
    std::set<keel_device_addr> imported_;                   // guarded by mutex_
};

}  // namespace keel::level_zero
