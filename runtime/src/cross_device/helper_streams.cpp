#include "helper_streams.hpp"

#include "../fallible_reach.hpp"
#include "../logging.hpp"
#include "../ordering_marks.hpp"
#include "origins.hpp"

#include <chrono>
#include <memory>
#include <string>
#include <utility>

namespace keel::cross_device {

namespace {

struct GiveBack {
    HelperStreams* owner;
    keel_stream helper;
};

// What the runtime kept for a helper goes before the plugin destroys it.
void helper_gone(keel_stream helper) noexcept {
    detail::ordering::stream_gone(helper);
}

}  // namespace

Result<keel_stream> HelperStreams::acquire(const detail::PluginApi& api, keel_device device) {
    destroy_retired(api);
    {
        std::lock_guard lock(mu_);
        if (!idle_.empty()) {
            keel_stream s = idle_.back();
            idle_.pop_back();
            ++lent_;
            return s;
        }
    }
    keel_stream s = nullptr;
    KEEL_TRY(api.stream_create(device, 0, &s));
    std::lock_guard lock(mu_);
    ++lent_;
    return s;
}

Result<void> HelperStreams::enqueue_give_back(const detail::PluginApi& api, keel_stream helper) {
    forget_stream_origins(helper);
    detail::fallible::forget_arrivals(helper);
    auto* payload = new (std::nothrow) GiveBack{this, helper};
    Result<void> enqueued =
        payload == nullptr ? Result<void>(Error(KEEL_STATUS_OUT_OF_MEMORY, "out of host memory"))
                           : api.stream_enqueue_host_func(
                                 helper,
                                 [](void* user_data, keel_status status) {
                                     std::unique_ptr<GiveBack> p(static_cast<GiveBack*>(user_data));
                                     p->owner->give_back(p->helper, status == KEEL_STATUS_OK);
                                 },
                                 payload);
    if (!enqueued.ok()) {
        delete payload;
        {
            std::lock_guard lock(mu_);
            --lent_;
        }
        returned_.notify_all();
        helper_gone(helper);
        if (auto destroyed = api.stream_destroy(helper); !destroyed.ok())
            detail::log_debug("[cross-device] helper stream: " + destroyed.error().message());
    }
    return enqueued;
}

void HelperStreams::give_back(keel_stream helper, bool healthy) noexcept {
    {
        std::lock_guard lock(mu_);
        --lent_;
        try {
            (healthy ? idle_ : retired_).push_back(helper);
        } catch (...) {
            // Out of host memory: the helper is leaked to plugin_shutdown's report.
        }
    }
    returned_.notify_all();
}

void HelperStreams::destroy_retired(const detail::PluginApi& api) noexcept {
    std::vector<keel_stream> retired;
    {
        std::lock_guard lock(mu_);
        if (retired_.empty()) return;
        retired.swap(retired_);
    }
    for (keel_stream s : retired) {
        helper_gone(s);
        (void)api.stream_destroy(s);  // its sticky error is someone else's
    }  // its sticky error is someone else's
}

void HelperStreams::close(const detail::PluginApi& api) noexcept {
    {
        // Bounded: a give-back runs at the end of its helper's work, which
        // runs within a bounded time (keel.h [stream.forward-progress]).
        std::unique_lock lock(mu_);
        if (!returned_.wait_for(lock, std::chrono::seconds(60), [&] { return lent_ == 0; }))
            detail::log_warn("[cross-device] " + std::to_string(lent_) +
                             " helper stream(s) not given back before the plugin shuts down");
    }
    destroy_retired(api);
    std::vector<keel_stream> idle;
    {
        std::lock_guard lock(mu_);
        idle.swap(idle_);
    }
    for (keel_stream s : idle) {
        helper_gone(s);
        if (auto r = api.stream_destroy(s); !r.ok()) detail::log_debug("[cross-device] helper stream: " + r.error().message());
    }
}

}  // namespace keel::cross_device
