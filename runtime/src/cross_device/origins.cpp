#include "origins.hpp"

#include "../access.hpp"
#include "../logging.hpp"
#include "bridge.hpp"

#include <keel/base/no_destructor.hpp>

#include <algorithm>
#include <atomic>
#include <iterator>
#include <mutex>
#include <new>
#include <unordered_map>
#include <utility>

namespace keel::cross_device {

namespace {

struct OriginTable {
    std::atomic<bool> in_use{false};
    std::atomic<std::uint64_t> next_order{1};
    std::mutex mu;
    std::unordered_map<keel_stream, Origins> streams;
    std::unordered_map<keel_event, Origins> events;
};

OriginTable& origin_table() {
    static base::NoDestructor<OriginTable> t;  // streams may close during static destruction
    return *t;
}

// Adds `o` to `into` (the later point of its stream wins); what is replaced
// goes to `dropped`, whose events go after the lock is released.
void merge_origin(Origins& into, Origin o, Origins& dropped) {
    auto same = std::find_if(into.begin(), into.end(), [&](const Origin& e) { return e.stream == o.stream; });
    if (same == into.end()) {
        into.push_back(std::move(o));
    } else if (same->order < o.order) {
        dropped.push_back(std::exchange(*same, std::move(o)));
    } else {
        dropped.push_back(std::move(o));
    }
}

Origins copy_of(const std::unordered_map<keel_stream, Origins>& map, keel_stream key) {
    auto it = map.find(key);
    return it == map.end() ? Origins{} : it->second;
}

}  // namespace

bool origins_in_use() noexcept { return origin_table().in_use.load(std::memory_order_relaxed); }

Result<Origin> make_origin(const detail::DeviceSlot& from_dev, keel_stream from) {
    OriginTable& t = origin_table();
    t.in_use.store(true, std::memory_order_relaxed);
    const detail::PluginApi& api = from_dev.api();
    keel_event handle = nullptr;
    KEEL_TRY(api.event_create(from_dev.handle, KEEL_EVENT_DEFAULT, &handle));
    // Owned from here: the Event destroys the plugin event on every path.
    Event point = detail::Access::event(&from_dev, handle, from_dev.plugin->shares().take(), EventTiming::off);
    if (Result<void> recorded = api.event_record(handle, from); !recorded.ok())
        return std::move(recorded).error().context("cross-device wait");
    Origin o;
    o.stream = from;
    o.order = t.next_order.fetch_add(1, std::memory_order_relaxed);
    try {
        o.point = std::make_shared<const Event>(std::move(point));
    } catch (const std::bad_alloc&) {
        return Error(KEEL_STATUS_OUT_OF_MEMORY, "[cross-device wait] out of host memory");
    }
    return o;
}

Origins origins_of_stream(keel_stream stream) {
    if (!origins_in_use()) return {};
    OriginTable& t = origin_table();
    std::lock_guard lock(t.mu);
    return copy_of(t.streams, stream);
}

Origins origins_of_event(keel_event event) {
    if (!origins_in_use()) return {};
    OriginTable& t = origin_table();
    std::lock_guard lock(t.mu);
    auto it = t.events.find(event);
    return it == t.events.end() ? Origins{} : it->second;
}

void event_recorded(keel_event event, keel_stream stream) {
    if (!origins_in_use()) return;
    OriginTable& t = origin_table();
    Origins dropped;
    std::lock_guard lock(t.mu);
    auto it = t.events.find(event);
    if (it != t.events.end()) {
        dropped = std::move(it->second);
        t.events.erase(it);
    }
    auto now = t.streams.find(stream);
    if (now == t.streams.end()) return;
    try {
        t.events.emplace(event, now->second);
    } catch (const std::bad_alloc&) {
        // Out of host memory: the record carries no origins (a plugin that
        // tracks ordering may then report a race that is none, never miss one).
    }
}  // the lock goes first, then `dropped`

void event_gone(keel_event event) noexcept {
    if (!origins_in_use()) return;
    OriginTable& t = origin_table();
    Origins dropped;
    {
        std::lock_guard lock(t.mu);
        auto it = t.events.find(event);
        if (it == t.events.end()) return;
        dropped = std::move(it->second);
        t.events.erase(it);
    }
}

void forget_stream_origins(keel_stream stream) noexcept {
    if (!origins_in_use()) return;
    OriginTable& t = origin_table();
    Origins dropped;
    {
        std::lock_guard lock(t.mu);
        auto it = t.streams.find(stream);
        if (it == t.streams.end()) return;
        dropped = std::move(it->second);
        t.streams.erase(it);
    }
}

void stream_gone(keel_stream stream) noexcept {
    if (!origins_in_use()) return;
    OriginTable& t = origin_table();
    std::vector<Origins> dropped;
    {
        std::lock_guard lock(t.mu);
        try {
            if (auto it = t.streams.find(stream); it != t.streams.end()) {
                dropped.push_back(std::move(it->second));
                t.streams.erase(it);
            }
            auto drop_points_of = [&](auto& map) {
                for (auto it = map.begin(); it != map.end();) {
                    Origins& list = it->second;
                    auto at = std::stable_partition(list.begin(), list.end(),
                                                    [&](const Origin& o) { return o.stream != stream; });
                    if (at != list.end()) {
                        dropped.emplace_back(std::make_move_iterator(at), std::make_move_iterator(list.end()));
                        list.erase(at, list.end());
                    }
                    it = list.empty() ? map.erase(it) : std::next(it);
                }
            };
            drop_points_of(t.streams);
            drop_points_of(t.events);
        } catch (const std::bad_alloc&) {
            // Kept: an origin at a finished point only costs memory.
        }
    }
}

Result<void> arrive(const detail::DeviceSlot& to_dev, keel_stream to, Origins incoming) {
    if (incoming.empty()) return ok();
    Origins kept;
    kept.reserve(incoming.size());
    Result<void> waited = ok();
    for (Origin& o : incoming) {
        if (o.stream == to) continue;  // a stream is in order with itself
        if (native_wait(to_dev, *detail::Access::slot(*o.point))) {
            if (waited.ok()) waited = to_dev.api().stream_wait_event(to, detail::Access::handle(*o.point));
            continue;
        }
        kept.push_back(std::move(o));
    }
    Origins dropped;
    if (!kept.empty()) {
        OriginTable& t = origin_table();
        try {
            std::lock_guard lock(t.mu);
            Origins& mine = t.streams[to];
            for (Origin& o : kept) merge_origin(mine, std::move(o), dropped);
        } catch (const std::bad_alloc&) {
            return Error(KEEL_STATUS_OUT_OF_MEMORY, "[cross-device wait] out of host memory");
        }
    }
    if (!waited.ok()) return std::move(waited).error().context("cross-device wait");
    return ok();
}

}  // namespace keel::cross_device
