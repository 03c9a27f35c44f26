#include "diagnose/ledger.hpp"

#include <algorithm>
#include <chrono>
#include <mutex>
#include <unordered_map>

namespace keel::doctor {

const char* describe(OpKind kind) noexcept {
    switch (kind) {
        case OpKind::none: return "operation";
        case OpKind::copy: return "copy";
        case OpKind::memset: return "memset";
        case OpKind::launch: return "kernel launch";
        case OpKind::host_func: return "host function";
        case OpKind::hold: return "hold";
        case OpKind::record: return "event record";
        case OpKind::fence: return "fence";
        case OpKind::wait_event: return "wait for an event";
        case OpKind::wait_fence: return "wait for a fence";
        case OpKind::order_after: return "order_after";
    }
    return "operation";
}

std::int64_t now_ns() noexcept {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

StreamLedger::StreamLedger(std::uint32_t id, std::string name, const detail::DeviceSlot* device, keel_stream handle,
                           std::uint64_t generation)
    : id_(id), name_(std::move(name)), device_(device), handle_(handle), generation_(generation) {}

StreamLedger::Noted StreamLedger::note_blocking(OpKind kind, Site target) noexcept {
    const std::uint64_t index = note(kind);
    const std::uint64_t j = slots_taken_.fetch_add(1, std::memory_order_relaxed);
    Slot& s = slots_[j % kSlots];
    s.stamp.store(0, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);
    s.index.store(index, std::memory_order_relaxed);
    s.kind.store(kind, std::memory_order_relaxed);
    s.target.store(target, std::memory_order_relaxed);
    s.state.store(HostFuncState::queued, std::memory_order_relaxed);
    s.started_ns.store(0, std::memory_order_relaxed);
    s.stamp.store(j + 1, std::memory_order_release);
    return {index, j};
}

void StreamLedger::passed(std::uint64_t index) noexcept {
    std::uint64_t seen = passed_.load(std::memory_order_relaxed);
    while (seen < index && !passed_.compare_exchange_weak(seen, index, std::memory_order_release,
                                                          std::memory_order_relaxed)) {
    }
}

void StreamLedger::host_func_started(std::uint64_t index, std::uint64_t slot) noexcept {
    Slot& s = slots_[slot % kSlots];
    if (s.stamp.load(std::memory_order_acquire) == slot + 1) {
        s.started_ns.store(now_ns(), std::memory_order_relaxed);
        s.state.store(HostFuncState::running, std::memory_order_release);
    }
    passed(index);
}

void StreamLedger::host_func_finished(std::uint64_t index, std::uint64_t slot) noexcept {
    Slot& s = slots_[slot % kSlots];
    if (s.stamp.load(std::memory_order_acquire) == slot + 1) s.state.store(HostFuncState::done, std::memory_order_release);
    passed(index + 1);
}

void StreamLedger::abandoned(std::uint64_t slot) noexcept {
    Slot& s = slots_[slot % kSlots];
    if (s.stamp.load(std::memory_order_acquire) == slot + 1) {
        s.kind.store(OpKind::none, std::memory_order_relaxed);
        s.state.store(HostFuncState::done, std::memory_order_release);
    }
}

OpKind StreamLedger::kind_at(std::uint64_t index) const noexcept {
    const std::uint64_t n = enqueued_.load(std::memory_order_acquire);
    if (index >= n || n - index > kKinds) return OpKind::none;
    return kinds_[index % kKinds].load(std::memory_order_relaxed);
}

std::vector<OpRecord> StreamLedger::blocking_ops(std::uint64_t from) const {
    std::vector<OpRecord> out;
    const std::uint64_t taken = slots_taken_.load(std::memory_order_acquire);
    const std::uint64_t first = taken > kSlots ? taken - kSlots : 0;
    for (std::uint64_t j = first; j < taken; ++j) {
        const Slot& s = slots_[j % kSlots];
        if (s.stamp.load(std::memory_order_acquire) != j + 1) continue;
        OpRecord r;
        r.index = s.index.load(std::memory_order_relaxed);
        r.kind = s.kind.load(std::memory_order_relaxed);
        r.target = s.target.load(std::memory_order_relaxed);
        r.state = s.state.load(std::memory_order_acquire);
        r.started_ns = s.started_ns.load(std::memory_order_relaxed);
        std::atomic_thread_fence(std::memory_order_acquire);
        if (s.stamp.load(std::memory_order_relaxed) != j + 1) continue;  // overwritten while read
        if (r.index >= from) out.push_back(r);
    }
    std::sort(out.begin(), out.end(), [](const OpRecord& a, const OpRecord& b) { return a.index < b.index; });
    return out;
}

namespace {

struct LedgerRegistry {
    std::mutex mu;
    std::uint32_t next_id = 1;
    std::unordered_map<std::uint32_t, std::shared_ptr<StreamLedger>> open;
};

LedgerRegistry& ledger_registry() {
    static LedgerRegistry* registry = new LedgerRegistry();  // never destroyed: streams may close during exit
    return *registry;
}

}  // namespace

std::shared_ptr<StreamLedger> open_ledger(const detail::DeviceSlot* device, const std::string& device_name,
                                          keel_stream handle, std::uint64_t generation) {
    LedgerRegistry& r = ledger_registry();
    std::lock_guard lock(r.mu);
    const std::uint32_t id = r.next_id++;
    if (r.next_id >= (1u << 24)) r.next_id = 1;  // a site keeps 24 bits of the id
    auto ledger = std::make_shared<StreamLedger>(id, device_name + " stream " + std::to_string(id), device, handle,
                                                 generation);
    r.open[id] = ledger;
    return ledger;
}

void close_ledger(const std::shared_ptr<StreamLedger>& ledger) noexcept {
    if (!ledger) return;
    ledger->close();
    LedgerRegistry& r = ledger_registry();
    std::lock_guard lock(r.mu);
    r.open.erase(ledger->id());
}

std::vector<std::shared_ptr<StreamLedger>> open_ledgers() {
    LedgerRegistry& r = ledger_registry();
    std::vector<std::shared_ptr<StreamLedger>> out;
    {
        std::lock_guard lock(r.mu);
        out.reserve(r.open.size());
        for (const auto& [id, ledger] : r.open) out.push_back(ledger);
    }
    std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a->id() < b->id(); });
    return out;
}

std::shared_ptr<StreamLedger> find_ledger(std::uint32_t id) {
    LedgerRegistry& r = ledger_registry();
    std::lock_guard lock(r.mu);
    auto it = r.open.find(id);
    return it == r.open.end() ? nullptr : it->second;
}

}  // namespace keel::doctor
