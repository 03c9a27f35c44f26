#include "memory/pinned_uses.hpp"

#include "logging.hpp"
#include "memory/event_wait.hpp"

#include <algorithm>
#include <utility>

namespace keel::memory {

bool PinnedUses::passed(Use& use) noexcept {
    auto done = use.core->ops().event_query(use.event);
    return done.ok() && *done;
}

void PinnedUses::retire(Use& use) noexcept {
    MemoryCore& core = *use.core;
    // A passed point goes back at once: its stream may be closed, and the
    // tracker would keep a queue for that handle.
    if (passed(use)) {
        core.events().release(use.event);
        use.event = nullptr;
        return;
    }
    try {
        core.tracker().track(use.stream, use.seq, use.event, /*owns_event=*/true, WorkKind::fence, HostFunc{});
    } catch (...) {
        (void)wait_for_event(core.ops(), use.event);
        core.events().release(use.event);
    }
    use.event = nullptr;
}

Result<void> PinnedUses::note(const std::shared_ptr<MemoryCore>& core, keel_stream stream) {
    auto event = core->events().acquire();
    Result<void> recorded = event.ok() ? core->ops().event_record(*event, stream)
                                       : Result<void>(std::move(event).error());
    if (!recorded.ok()) {
        if (event.ok()) core->events().release(*event);
        // The copy is in the stream's queue without a point after it: wait
        // for it here. It was accepted, so the call still succeeds; a failed
        // stream reports its error at its next call or synchronisation.
        auto synced = core->ops().stream_synchronize(stream);
        detail::log_debug("[PinnedBuffer] no point after the copy (" + recorded.error().message() +
                          "), waited for the stream" + (synced.ok() ? "" : ": " + synced.error().message()));
        return ok();
    }
    Use use{core, stream, *event, core->tracker().next_seq(stream)};
    std::vector<Use> done;
    {
        std::lock_guard lock(mu_);
        auto same = std::find_if(uses_.begin(), uses_.end(),
                                 [&](const Use& u) { return u.stream == stream && u.core == core; });
        if (same != uses_.end()) {
            done.push_back(std::move(*same));
            *same = std::move(use);
        } else {
            uses_.push_back(std::move(use));
        }
        // Streams come and go: forget the points already passed, so that a
        // buffer reused for ever by short-lived streams keeps few.
        if (uses_.size() > kPruneAbove)
            std::erase_if(uses_, [&](Use& u) {
                if (u.stream == stream || !passed(u)) return false;
                done.push_back(std::move(u));
                return true;
            });
    }
    for (Use& u : done) retire(u);
    return ok();
}

void PinnedUses::wait() noexcept {
    std::vector<Use> uses;
    {
        std::lock_guard lock(mu_);
        uses.swap(uses_);
    }
    for (Use& u : uses) {
        auto waited = wait_for_event(u.core->ops(), u.event);
        if (!waited.ok()) detail::log_debug("[PinnedBuffer] " + waited.error().message());
        u.core->events().release(u.event);
    }
}

}  // namespace keel::memory
