#include "trace/history.hpp"

#include <keel/base/no_destructor.hpp>

#include <keel/trace.hpp>

#include <map>
#include <mutex>
#include <utility>
#include <vector>

namespace keel::trace {

alignas(64) std::atomic<bool> g_history{false};
std::atomic<std::uint64_t> g_history_entries{0};

namespace {

struct HistoryTable {
    std::mutex mu;
    std::map<std::pair<const void*, keel_device_addr>, std::string> tags;
};

HistoryTable& table() {
    // Never destroyed: buffers may be freed during exit.
    static base::NoDestructor<HistoryTable> t;
    return t.get();
}

thread_local std::vector<std::string> t_tags;

}  // namespace

void remember_allocation(const void* owner, keel_device_addr addr, const std::source_location& where) noexcept {
    try {
        std::string tag = !t_tags.empty() ? t_tags.back()
                                          : std::string(where.file_name()) + ":" + std::to_string(where.line());
        HistoryTable& t = table();
        std::lock_guard lock(t.mu);
        if (t.tags.insert_or_assign({owner, addr}, std::move(tag)).second)
            g_history_entries.fetch_add(1, std::memory_order_relaxed);
    } catch (...) {
        // Out of host memory: this block goes untagged.
    }
}

void forget_allocation(const void* owner, keel_device_addr addr) noexcept {
    HistoryTable& t = table();
    std::lock_guard lock(t.mu);
    if (t.tags.erase({owner, addr}) != 0) g_history_entries.fetch_sub(1, std::memory_order_relaxed);
}

std::string allocation_tag(const void* owner, keel_device_addr addr) {
    HistoryTable& t = table();
    std::lock_guard lock(t.mu);
    auto it = t.tags.find({owner, addr});
    return it == t.tags.end() ? std::string() : it->second;
}

}  // namespace keel::trace

namespace keel {

void set_memory_history(bool on) noexcept { trace::g_history.store(on, std::memory_order_relaxed); }
bool memory_history() noexcept { return trace::history_on(); }

MemoryTag::MemoryTag(std::string tag) noexcept {
    try {
        trace::t_tags.push_back(std::move(tag));
        pushed_ = true;
    } catch (...) {
        // Out of host memory: allocations keep the enclosing tag.
    }
}

MemoryTag::~MemoryTag() {
    if (pushed_) trace::t_tags.pop_back();
}

}  // namespace keel
