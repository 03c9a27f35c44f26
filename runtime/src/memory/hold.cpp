#include "memory/hold.hpp"

#include "logging.hpp"
#include "trace/hooks.hpp"

#include <memory>
#include <new>

namespace keel::memory {

Result<void> hold_task(MemoryCore& core, keel_stream stream, HostFunc release) {
    if (stream == nullptr) {
        // No stream can have work on a null handle: nothing to wait for.
        release.run();
        return Error(KEEL_STATUS_INVALID_ARGUMENT, "[hold] stream is null");
    }
    if (trace::on()) [[unlikely]] {
        // The release shows on the stream's track when it runs. Everything
        // that can fail comes before `release` moves, so it is never lost.
        try {
            auto box = std::make_unique<HostFunc>();
            HostFunc* inner = box.get();
            HostFunc traced([box = std::move(box), stream, held = trace::now_ns()](Status status) mutable {
                trace::hold_released(stream, held);
                box->run(status);
            });
            *inner = std::move(release);
            release = std::move(traced);
        } catch (const std::bad_alloc&) {
            // Out of host memory: `release` is untouched, its release goes untraced.
        }
    }
    // Not record_and_track: it drops the task on failure, and a failed
    // record must still not release the objects before the stream is done.
    auto event = core.events().acquire();
    Result<void> recorded = event.ok() ? core.ops().event_record(*event, stream)
                                       : Result<void>(std::move(event).error());
    if (recorded.ok()) {
        core.tracker().track(stream, core.tracker().next_seq(stream), *event, /*owns_event=*/true,
                             WorkKind::hold, std::move(release));
        return ok();
    }
    if (event.ok()) core.events().release(*event);
    auto synced = core.ops().stream_synchronize(stream);
    if (!synced.ok()) detail::log_debug("[hold] " + synced.error().message());
    release.run();
    return std::move(recorded).error().context("hold");
}

}  // namespace keel::memory
