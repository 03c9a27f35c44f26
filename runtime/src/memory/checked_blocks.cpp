#include "memory/checked_blocks.hpp"

#include "logging.hpp"
#include "memory/event_wait.hpp"

#include <algorithm>
#include <cstdio>
#include <iterator>

namespace keel::memory {

namespace {

std::string hex(std::uint64_t v) {
    char buf[24];
    std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
    return buf;
}

std::string block_text(keel_device_addr addr, std::uint64_t requested, keel_stream stream) {
    return "the buffer [" + hex(addr) + ", +" + std::to_string(requested) + " bytes) of stream " +
           hex(reinterpret_cast<std::uintptr_t>(stream));
}

}  // namespace

CheckedBlocks::CheckedBlocks(DeviceOps& ops, EventPool& events, std::uint64_t quarantine_bytes)
    : ops_(ops), events_(events), quarantine_limit_(quarantine_bytes) {}

CheckedBlocks::~CheckedBlocks() {
    for (Quarantined& q : quarantine_)
        if (q.done != nullptr) events_.release(q.done);
}

void CheckedBlocks::add_segment(keel_device_addr addr, std::uint64_t size) {
    std::lock_guard lock(mu_);
    segments_[addr] = size;
}

void CheckedBlocks::remove_segment(keel_device_addr addr) noexcept {
    std::lock_guard lock(mu_);
    segments_.erase(addr);
}

void CheckedBlocks::forget(keel_device_addr addr) noexcept {
    std::lock_guard lock(mu_);
    live_.erase(addr);
    segments_.erase(addr);
}

void CheckedBlocks::on_allocate(keel_stream stream, keel_device_addr addr, std::uint64_t requested,
                                std::uint64_t capacity) {
    {
        std::lock_guard lock(mu_);
        live_[addr] = Live{requested, capacity, stream};
    }
    if (auto r = ops_.annotate(DeviceOps::BlockEvent::acquired, stream, addr, capacity); !r.ok())
        detail::log_error("[checked memory] " + r.error().message());
    if (can_memset_ && capacity > requested) {
        auto r = ops_.memset_d8(stream, addr + requested, kGuardByte, capacity - requested);
        if (!r.ok() && r.error().code() == KEEL_STATUS_UNIMPLEMENTED) can_memset_ = false;
        else if (!r.ok()) detail::log_error("[checked memory] filling the guard bytes of " +
                                            block_text(addr, requested, stream) + ": " + r.error().message());
    }
}

std::vector<Block*> CheckedBlocks::retire(Block* block, keel_stream stream, keel_device_addr addr,
                                          std::uint64_t requested, std::uint64_t capacity) noexcept {
    Quarantined q{block, addr, capacity, requested, stream, nullptr, nullptr, 0};
    {
        std::lock_guard lock(mu_);
        live_.erase(addr);
    }
    // In stream order: the guard is read before the poison overwrites it.
    // Without a stream (its owner was closed) neither can run.
    const bool on_stream = stream != nullptr;
    if (on_stream && can_memset_ && capacity > requested) {
        try {
            q.guard_size = capacity - requested;
            q.guard = std::make_unique<std::uint8_t[]>(q.guard_size);
            if (!ops_.pageable_d2h(stream, q.guard.get(), addr + requested, q.guard_size).ok()) q.guard.reset();
        } catch (...) {
            q.guard.reset();
        }
    }
    if (on_stream && can_memset_) {
        auto r = ops_.memset_d8(stream, addr, kPoisonByte, capacity);
        if (!r.ok() && r.error().code() != KEEL_STATUS_UNIMPLEMENTED)
            detail::log_error("[checked memory] poisoning " + block_text(addr, requested, stream) + " (freed)" +
                              ": " + r.error().message());
    }
    if (on_stream) {
        if (auto e = events_.acquire(); e.ok()) {
            if (ops_.event_record(*e, stream).ok()) q.done = *e;
            else events_.release(*e);
        }
        if (auto r = ops_.annotate(DeviceOps::BlockEvent::released, stream, addr, capacity); !r.ok())
            detail::log_error("[checked memory] " + r.error().message());
    }

    std::vector<Quarantined> leaving;
    {
        std::lock_guard lock(mu_);
        try {
            quarantined_bytes_ += capacity;
            quarantine_.push_back(std::move(q));
        } catch (...) {
            quarantined_bytes_ -= capacity;
            leaving.push_back(std::move(q));  // no room to remember it: it leaves now
        }
        while (!quarantine_.empty() && quarantined_bytes_ > quarantine_limit_) {
            quarantined_bytes_ -= quarantine_.front().capacity;
            leaving.push_back(std::move(quarantine_.front()));
            quarantine_.pop_front();
        }
    }
    std::vector<Block*> out;
    for (Quarantined& l : leaving) {
        verify(l);
        out.push_back(l.block);
    }
    return out;
}

std::vector<Block*> CheckedBlocks::drain() noexcept {
    std::deque<Quarantined> leaving;
    {
        std::lock_guard lock(mu_);
        leaving.swap(quarantine_);
        quarantined_bytes_ = 0;
    }
    std::vector<Block*> out;
    for (Quarantined& l : leaving) {
        verify(l);
        out.push_back(l.block);
    }
    return out;
}

void CheckedBlocks::verify(Quarantined& q) noexcept {
    if (q.done != nullptr) {
        // A failed stream never ran the copy: nothing to compare.
        const bool ran = wait_for_event(ops_, q.done).ok();
        events_.release(q.done);
        q.done = nullptr;
        if (!ran) return;
    } else {
        return;  // cannot tell when the copy ran
    }
    if (!q.guard) return;
    const auto* begin = q.guard.get();
    const auto* end = begin + q.guard_size;
    const auto* bad = std::find_if(begin, end, [](std::uint8_t b) { return b != kGuardByte; });
    if (bad == end) return;
    const auto offset = static_cast<std::uint64_t>(bad - begin);
    Error e(KEEL_STATUS_OUT_OF_RANGE,
            "[checked memory] heap overflow: byte " + std::to_string(q.requested + offset) + " of " +
                block_text(q.addr, q.requested, q.stream) + ", a guard byte past its end, was overwritten " +
                "while the buffer was live (a kernel or copy wrote past the buffer)");
    detail::log_error(e.message());
    std::lock_guard lock(mu_);
    if (!finding_) finding_ = std::move(e);
}

Result<void> CheckedBlocks::check_view(const char* where, const char* role, keel_device_addr addr,
                                       std::uint64_t size) const {
    std::lock_guard lock(mu_);
    auto seg = segments_.upper_bound(addr);
    if (seg == segments_.begin()) return ok();
    --seg;
    if (addr >= seg->first + seg->second) return ok();  // not memory of this allocator
    const std::string range = "[" + hex(addr) + ", +" + std::to_string(size) + " bytes)";
    auto it = live_.upper_bound(addr);
    if (it != live_.begin()) {
        --it;
        const Live& b = it->second;
        if (addr < it->first + b.requested) {
            if (size <= it->first + b.requested - addr) return ok();
            return Error(KEEL_STATUS_OUT_OF_RANGE,
                         std::string("[") + where + "] " + role + " " + range + " runs " +
                             std::to_string(addr + size - (it->first + b.requested)) + " byte(s) past the end of " +
                             block_text(it->first, b.requested, b.stream) +
                             " (checked memory: it would corrupt the neighbouring block)");
        }
        if (addr < it->first + b.capacity)
            return Error(KEEL_STATUS_OUT_OF_RANGE,
                         std::string("[") + where + "] " + role + " " + range + " starts past the end of " +
                             block_text(it->first, b.requested, b.stream) + " (checked memory)");
    }
    return Error(KEEL_STATUS_OUT_OF_RANGE,
                 std::string("[") + where + "] use after free: " + role + " " + range +
                     " lies in no live buffer of the caching allocator: a view of a freed buffer "
                     "(checked memory)");
}

std::optional<Error> CheckedBlocks::finding() const {
    std::lock_guard lock(mu_);
    return finding_;
}

}  // namespace keel::memory
