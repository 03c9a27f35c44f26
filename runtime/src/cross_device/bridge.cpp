#include "bridge.hpp"

#include "../access.hpp"
#include "../fallible_reach.hpp"
#include "../logging.hpp"
#include "../memory/fence.hpp"
#include "../ordering_marks.hpp"
#include "helper_streams.hpp"
#include "origins.hpp"

#include <keel/c_error.hpp>

#include <condition_variable>
#include <mutex>
#include <new>
#include <string>
#include <utility>

namespace keel::cross_device {

namespace {

// Opened once by the host function at the end of the awaited work, with
// that work's status; waited for by the host function on the waiting stream.
class Gate {
public:
    explicit Gate(std::string awaited) : awaited_(std::move(awaited)) {}

    void open(keel_status status) noexcept {
        {
            std::lock_guard lock(mu_);
            status_ = status;
            open_ = true;
        }
        cv_.notify_all();
    }
    [[nodiscard]] keel_status wait() noexcept {
        std::unique_lock lock(mu_);
        cv_.wait(lock, [&] { return open_; });
        return status_;
    }
    [[nodiscard]] std::string failure(keel_status status) const {
        return std::string("[cross-device wait] ") + awaited_ + " failed before the point this stream waits for (" +
               status_name(status) + ")";
    }

private:
    const std::string awaited_;  // "work of level_zero:0", for the message
    std::mutex mu_;
    std::condition_variable cv_;
    bool open_ = false;
    keel_status status_ = KEEL_STATUS_OK;
};

using GateRef = std::shared_ptr<Gate>;

void open_gate(void* user_data, keel_status status) noexcept {
    std::unique_ptr<GateRef> gate(static_cast<GateRef*>(user_data));
    (*gate)->open(status);
}

// A failed stream still orders its waits (keel.h 1.3): it waits either way.
keel_error* pass_gate_fallible(void* user_data, keel_status status) noexcept {
    std::unique_ptr<GateRef> gate(static_cast<GateRef*>(user_data));
    const keel_status awaited = (*gate)->wait();
    if (awaited == KEEL_STATUS_OK || status != KEEL_STATUS_OK) return nullptr;
    return make_c_error(awaited, (*gate)->failure(awaited));
}

void pass_gate(void* user_data, keel_status status) noexcept {
    std::unique_ptr<GateRef> gate(static_cast<GateRef*>(user_data));
    const keel_status awaited = (*gate)->wait();
    if (awaited != KEEL_STATUS_OK && status == KEEL_STATUS_OK)
        detail::log_warn((*gate)->failure(awaited) +
                         "; this stream's plugin cannot fail a stream from a host function, so it goes on");
}

// The waiting half: a host function on `to` that passes once the gate opened.
Result<void> enqueue_pass(const detail::DeviceSlot& to_dev, keel_stream to, const GateRef& gate) {
    auto* ref = new (std::nothrow) GateRef(gate);
    if (ref == nullptr) return Error(KEEL_STATUS_OUT_OF_MEMORY, "[cross-device wait] out of host memory");
    const detail::PluginApi& api = to_dev.api();
    // Counted on `to` as a user's fallible host function is: work handed to
    // `to`'s device after it waits for it (settle_fallible_host_funcs).
    Result<void> r = api.has_fallible_host_func() ? detail::fallible::enqueue_counted(api, to, &pass_gate_fallible, ref)
                                                  : api.stream_enqueue_host_func(to, &pass_gate, ref);
    if (!r.ok()) delete ref;
    return r;
}

// `to` waits for what `from` has enqueued so far, through a gate. `carried`:
// the origins `from` is ordered after; with them, the point of `from` as an
// origin of its own (origins.hpp).
Result<void> bridge(const detail::DeviceSlot& to_dev, keel_stream to, const detail::DeviceSlot& from_dev,
                    keel_stream from, Origins carried) {
    GateRef gate;
    try {
        gate = std::make_shared<Gate>("work of " + from_dev.name);
    } catch (const std::bad_alloc&) {
        return Error(KEEL_STATUS_OUT_OF_MEMORY, "[cross-device wait] out of host memory");
    }
    // The opening half first: if `from` refuses it (it failed already), the
    // waiting stream fails with that error instead.
    auto* ref = new (std::nothrow) GateRef(gate);
    if (ref == nullptr) return Error(KEEL_STATUS_OUT_OF_MEMORY, "[cross-device wait] out of host memory");
    if (auto opened = from_dev.api().stream_enqueue_host_func(from, &open_gate, ref); !opened.ok()) {
        delete ref;
        gate->open(opened.error().code() == KEEL_STATUS_OK ? KEEL_STATUS_INTERNAL : opened.error().code());
    }
    // If the waiting half cannot be enqueued, the gate opens harmlessly.
    KEEL_TRY(enqueue_pass(to_dev, to, gate));
    // The plugin of `to` sees nothing of the gate: what it now waits for
    // travels on as origins (a plugin that tracks ordering then sees it).
    Result<Origin> here = make_origin(from_dev, from);
    if (here.ok()) carried.push_back(std::move(*here));
    else detail::log_debug("[cross-device wait] no event at the awaited point: " + here.error().message());
    return arrive(to_dev, to, std::move(carried));
}

}  // namespace

bool native_wait(const detail::DeviceSlot& waiter, const detail::DeviceSlot& source) noexcept {
    if (&waiter == &source) return true;
    if (waiter.plugin != source.plugin || waiter.api().abi_minor() < 6) return false;
    return waiter.properties.has(DeviceCapability::peer_event_wait) &&
           source.properties.has(DeviceCapability::peer_event_wait);
}

Result<void> order_after(const detail::DeviceSlot& to_dev, keel_stream to, const detail::DeviceSlot& from_dev,
                         keel_stream from, const std::shared_ptr<memory::MemoryCore>& from_core) {
    if (native_wait(to_dev, from_dev)) {
        Origins carried = origins_of_stream(from);
        // A fence of `from`'s memory instance: its event is recycled once reached.
        KEEL_TRY_ASSIGN(Fence fence, memory::record_fence(from_core, from));
        KEEL_TRY(from_dev.api().stream_wait_event(to, detail::Access::event(fence)));
        return detail::ordering::arrived_from_stream(to_dev, to, from, std::move(carried));
    }
    KEEL_TRY(detail::fallible::arrive_from_stream(to, from));
    return bridge(to_dev, to, from_dev, from, origins_of_stream(from));
}

Result<void> wait_event(const detail::DeviceSlot& to_dev, keel_stream to, const detail::DeviceSlot& event_dev,
                        keel_event event) {
    Origins carried = origins_of_event(event);
    if (native_wait(to_dev, event_dev)) {
        KEEL_TRY(event_dev.api().stream_wait_event(to, event));
        return detail::ordering::arrived_from_event(to_dev, to, event, std::move(carried));
    }
    KEEL_TRY(detail::fallible::arrive_from_event(to, event));
    // A helper stream of the event's device captures the point now (a wait
    // on its own device), and its end opens the gate.
    HelperStreams& helpers = *event_dev.helpers;
    KEEL_TRY_ASSIGN(keel_stream helper, helpers.acquire(event_dev.api(), event_dev.handle));
    Result<void> waited = event_dev.api().stream_wait_event(helper, event);
    if (waited.ok()) waited = bridge(to_dev, to, event_dev, helper, std::move(carried));
    Result<void> given_back = helpers.enqueue_give_back(event_dev.api(), helper);
    KEEL_TRY(std::move(waited));
    return given_back;
}

}  // namespace keel::cross_device
