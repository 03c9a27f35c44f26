#include "ipc_order.hpp"

#include "../address_space.hpp"
#include "checker.hpp"

#include <keel/plugin/host_log.hpp>

#include <algorithm>

namespace keel::cpu {

void IpcOrder::imported(std::uint64_t id, keel_device_addr base, ipc::AllocationHeader* header) {
    imported_[id] = Imported{header, base};
    closed_.erase(base);
    std::uint64_t& known = known_[header->uid];
    known = std::max(known, header->host_ordered.load(std::memory_order_acquire));
}

void IpcOrder::forget(std::uint64_t id, keel_device_addr base, bool closed_import) {
    exported_.erase(id);
    imported_.erase(id);
    if (closed_import) closed_.insert(base);
}

void IpcOrder::on_write(std::uint64_t id, std::uint64_t stream, std::uint64_t tick) {
    auto it = exported_.find(id);
    if (it == exported_.end()) return;
    const std::uint64_t number = it->second.header->writes.fetch_add(1, std::memory_order_acq_rel) + 1;
    it->second.pending.push_back(Write{number, stream, tick});
}

std::uint64_t IpcOrder::ordered_writes(Exported& e, const VectorClock* clock, const VectorClock& host) {
    while (!e.pending.empty() && host.get(e.pending.front().stream) >= e.pending.front().tick)
        e.pending.pop_front();
    const std::uint64_t all = e.header->writes.load(std::memory_order_acquire);
    for (const Write& w : e.pending) {
        const bool ordered = host.get(w.stream) >= w.tick || (clock != nullptr && clock->get(w.stream) >= w.tick);
        if (!ordered) return w.number - 1;
    }
    return all;
}

void IpcOrder::before_export(std::uint64_t id, const VectorClock& host) {
    auto it = exported_.find(id);
    if (it == exported_.end()) return;
    const std::uint64_t ordered = ordered_writes(it->second, nullptr, host);
    auto& h = it->second.header->host_ordered;
    if (h.load(std::memory_order_acquire) < ordered) h.store(ordered, std::memory_order_release);
}

void IpcOrder::cover(const VectorClock* clock, const VectorClock& host, ipc::EventState& state, std::uint64_t record) {
    const std::uint32_t version = state.cover_version.load(std::memory_order_relaxed);
    state.cover_version.store(version + 1, std::memory_order_release);  // odd: being rewritten
    std::uint32_t n = 0;
    for (auto& [id, e] : exported_) {
        if (n == ipc::kMaxCovered) break;
        state.cover[n].uid.store(e.header->uid, std::memory_order_relaxed);
        state.cover[n].writes.store(ordered_writes(e, clock, host), std::memory_order_relaxed);
        ++n;
    }
    state.cover_count.store(n, std::memory_order_relaxed);
    state.cover_record.store(record, std::memory_order_relaxed);
    state.cover_version.store(version + 2, std::memory_order_release);
}

void IpcOrder::learn(const ipc::EventState& state, std::uint64_t record) {
    for (int attempt = 0; attempt < 1000; ++attempt) {
        const std::uint32_t before = state.cover_version.load(std::memory_order_acquire);
        if (before & 1u) continue;
        if (state.cover_record.load(std::memory_order_acquire) != record) return;  // re-recorded since: nothing sure
        std::uint32_t n = std::min(state.cover_count.load(std::memory_order_acquire), ipc::kMaxCovered);
        std::pair<std::uint64_t, std::uint64_t> seen[ipc::kMaxCovered];
        for (std::uint32_t i = 0; i < n; ++i)
            seen[i] = {state.cover[i].uid.load(std::memory_order_acquire),
                       state.cover[i].writes.load(std::memory_order_acquire)};
        if (state.cover_version.load(std::memory_order_acquire) != before) continue;
        for (std::uint32_t i = 0; i < n; ++i) {
            std::uint64_t& known = known_[seen[i].first];
            known = std::max(known, seen[i].second);
        }
        return;
    }
}

std::optional<std::string> IpcOrder::unordered(std::uint64_t id, bool write) const {
    auto it = imported_.find(id);
    if (it == imported_.end()) return std::nullopt;
    const ipc::AllocationHeader& h = *it->second.header;
    const std::uint64_t writes = h.writes.load(std::memory_order_acquire);
    auto k = known_.find(h.uid);
    const std::uint64_t known = k == known_.end() ? 0 : k->second;
    if (writes <= known) return std::nullopt;
    return std::string(write ? "writes" : "reads") + " imported memory before the exporter's writes are ordered " +
           "by the shared event: process " + std::to_string(h.exporter_pid) + " enqueued " + std::to_string(writes) +
           " write(s) to it and this process waited for " + std::to_string(known) +
           " of them (record an interprocess event after the writes in the exporter, and wait for it here "
           "with stream_wait_event, before the access)";
}

// ---- the Checker's IPC members ------------------------------------------------

void Checker::ipc_exported(std::uint64_t id, ipc::AllocationHeader* header) {
    std::lock_guard lock(mutex_);
    ipc_order_.exported(id, header);
}

void Checker::ipc_imported(std::uint64_t id, keel_device_addr base, ipc::AllocationHeader* header) {
    std::lock_guard lock(mutex_);
    ipc_order_.imported(id, base, header);
}

void Checker::ipc_forget(std::uint64_t id, keel_device_addr base, bool closed_import) {
    std::lock_guard lock(mutex_);
    ipc_order_.forget(id, base, closed_import);
    if (closed_import) order_.forget(id);
}

void Checker::ipc_before_export(std::uint64_t id) {
    std::lock_guard lock(mutex_);
    if (config_.races) ipc_order_.before_export(id, order_.host());
}

void Checker::ipc_cover(const ClockRef& clock, ipc::EventState& state, std::uint64_t record) {
    std::lock_guard lock(mutex_);
    if (config_.races) ipc_order_.cover(clock.get(), order_.host(), state, record);
}

void Checker::ipc_learn(const ipc::EventState& state, std::uint64_t record) {
    std::lock_guard lock(mutex_);
    if (config_.races) ipc_order_.learn(state, record);
}

Result<void> Checker::ipc_free_exported(std::uint64_t id, keel_device_addr base, std::uint64_t size,
                                        std::uint32_t open_imports, std::int32_t importer_pid) {
    if (config_.late_free == LateFreeMode::off) return ok();
    auto lock = this->lock();
    const std::string msg = "exported device allocation #" + std::to_string(id) + " " + hex(base) + " (" +
                            std::to_string(size) + " bytes) freed while " + std::to_string(open_imports) +
                            " importer(s) still have it open (process " + std::to_string(importer_pid) +
                            "): the exporter must not free shared memory before every importer closed it " +
                            "(ipc_memory_close)";
    if (config_.late_free == LateFreeMode::log) {
        plugin::HostLog::write(KEEL_LOG_ERROR, "[cpu device_free] " + msg);
        return ok();
    }
    return report(lock, Finding{KEEL_STATUS_FAILED_PRECONDITION,
                                msg + "; the free is refused and the memory stays allocated", {}});
}

}  // namespace keel::cpu
