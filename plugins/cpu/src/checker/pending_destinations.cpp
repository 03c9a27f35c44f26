// The host side of device-to-host copies (happens-before checking on): from
// the enqueue until the host OBSERVED the copy's completion (a synchronize,
// a successful query, a host function ordered after it starting, the
// stream going away), the whole pages of the destination are inaccessible
// (guarded_pages), so that a host read or write in that window stops the
// program with a diagnostic naming the copy. Which pages: of pageable
// memory, the pages wholly inside the destination (what else shares its
// first and last page is not the copy's); of a pinned block, also the
// partial page at an end where the destination reaches the block's end
// (the block owns its pages whole).
//
// Every byte of the destination is fingerprinted at the enqueue and checked
// when the copy runs: a host that wrote it in between, or freed or
// reallocated it (the allocator writes its own bookkeeping there), is
// reported by the copy. That is what covers the partial pages at the ends,
// and destinations too small to hold a whole page; reads there cannot be
// seen. When the copy runs, its guarded pages must also still be mapped and
// inaccessible: memory unmapped and mapped again is reported by the copy
// too, whatever it holds now.
#include "checker.hpp"

#include "../pinned_memory.hpp"
#include "../stream.hpp"
#include "guarded_pages.hpp"
#include "host_memory.hpp"

#include <unistd.h>

namespace keel::cpu {
namespace {

std::uintptr_t page_size() {
    static const std::uintptr_t p = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
    return p;
}
std::uintptr_t page_down(std::uintptr_t a) { return a & ~(page_size() - 1); }
std::uintptr_t page_up(std::uintptr_t a) { return page_down(a + page_size() - 1); }

}  // namespace

bool Checker::host_range_guarded(std::uintptr_t begin, std::uintptr_t end) const {
    for (const auto& [handle, g] : guarded_)
        if (g.begin < end && begin < g.end) return true;
    return false;
}

void Checker::guard_destination(const Lock&, Stream& stream, const Op& op, CheckedOp& c) {
    c.host_guard = 0;
    c.destination_fingerprint.reset();
    const auto begin = reinterpret_cast<std::uintptr_t>(op.dst_host);
    const std::uintptr_t end = begin + op.size;
    std::uintptr_t guard_begin = page_up(begin), guard_end = page_down(end);
    std::optional<PinnedInfo> block;
    if (c.pinned_id != 0) block = pinned_.find_containing(op.dst_host, op.size);
    if (block) {
        const auto base = reinterpret_cast<std::uintptr_t>(block->base);
        if (begin == base) guard_begin = begin;
        if (end == base + block->size) guard_end = page_up(end);
    }
    // What may legitimately change the bytes before this copy runs: an
    // earlier copy into them, or a host function of this stream queued
    // before it. Guarded bytes cannot be read for a fingerprint either.
    const TrackedStream& tracked = streams_.at(stream.id());
    const bool may_change = host_range_guarded(begin, end) || host_range_pending_write(begin, end) ||
                            tracked.last_host_function > stream.timeline()->completed();
    if (!may_change) {
        if (block) {
            host_memory::Fingerprint f;
            f.add(static_cast<const std::byte*>(op.dst_host), op.size);
            c.destination_fingerprint = f.value();
        } else if (auto fp = host_memory::fingerprint(op.dst_host, op.size); fp.ok()) {
            c.destination_fingerprint = *fp;
        } else {
            return;  // not mapped: the copy reports it when it runs
        }
    }
    if (guard_begin >= guard_end) return;
    c.host_guard = guarded_pages::guard_pending_write(guarded_pages::PendingWrite{
        guard_begin, guard_end, begin, end, stream.id(), c.use.position, block ? block->id : 0});
    if (c.host_guard != 0) guarded_.emplace(c.host_guard, GuardedDestination{stream.id(), c.tick, begin, end});
}

namespace {

// Releases (and forgets) the guards `pred` picks.
template <class Guards, class Pred>
void release_where(Guards& guarded, Pred&& pred) {
    for (auto it = guarded.begin(); it != guarded.end();) {
        if (!pred(it->second)) {
            ++it;
            continue;
        }
        guarded_pages::release_pending_write(it->first);
        it = guarded.erase(it);
    }
}

}  // namespace

void Checker::release_observed_destinations(const Lock&) {
    release_where(guarded_, [&](const GuardedDestination& g) { return order_.host().get(g.stream) >= g.tick; });
}

void Checker::release_destinations(const Lock&, std::uintptr_t begin, std::uintptr_t end) {
    release_where(guarded_, [&](const GuardedDestination& g) { return g.begin < end && begin < g.end; });
}

void Checker::release_destinations_of(const Lock&, std::uint64_t stream) {
    release_where(guarded_, [&](const GuardedDestination& g) { return g.stream == stream; });
}

}  // namespace keel::cpu
