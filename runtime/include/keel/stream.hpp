// Stream: an in-order queue of work on one device.
#pragma once

#include <keel/buffer.hpp>
#include <keel/device.hpp>
#include <keel/host_func.hpp>
#include <keel/keel.h>
#include <keel/memory/deferred_task.hpp>
#include <keel/result.hpp>

#include <cstdint>
#include <memory>
#include <utility>

namespace keel {

class Event;
class Kernel;
class KernelArgs;

// Owns one plugin stream (stream_create ... stream_destroy).
//
// Work enqueued on a stream runs in enqueue order, asynchronously: every
// enqueue call returns at once and the work runs later. Errors of the
// enqueue itself (bad arguments, sizes that do not fit) come back from the
// call; an error while the work runs puts the stream in an error state that
// synchronize(), query(), events recorded after it and later enqueues report.
//
// Host memory given to an async copy is read or written when the copy runs,
// not at the call: it must stay valid (and, for host-to-device, unchanged)
// until then (synchronize, or wait on an event recorded after the copy).
//
// Move-only. A moved-from stream is empty: every call fails with
// INVALID_ARGUMENT. The destructor waits for the enqueued work and releases
// the stream; a sticky error it finds is logged (use close() to see it).
//
// Threads: may be sent to another thread. Enqueue members are const and may
// be called from several threads at once; work from several threads is
// ordered in the order the calls return. Moving, close() and destruction
// need exclusive access.
class Stream {
public:
    [[nodiscard]] static Result<Stream> create(const Device& device);

    Stream(const Stream&) = delete;
    Stream& operator=(const Stream&) = delete;
    Stream(Stream&& other) noexcept;
    Stream& operator=(Stream&& other) noexcept;
    ~Stream();

    [[nodiscard]] const Device& device() const noexcept { return device_; }
    [[nodiscard]] bool empty() const noexcept { return handle_ == nullptr; }

    // Blocks until all work enqueued before this call has run; returns the
    // stream's error, if any.
    [[nodiscard]] Result<void> synchronize() const;
    // Non-blocking: true when all enqueued work has run.
    [[nodiscard]] Result<bool> query() const;

    // Orders all work enqueued after this call behind `event`'s most recent
    // record (a device-side fence; the host does not block). The event must
    // be of the same device (UNIMPLEMENTED otherwise in ABI 1.0).
    [[nodiscard]] Result<void> wait(const Event& event) const;

    // Runs `fn` on a plugin thread when the stream reaches this point. The
    // stream owns `fn` from the call on and destroys it after it ran, also
    // when the stream is in an error state; if the enqueue fails, `fn` is
    // destroyed before this returns and never runs.
    // `fn` must not block for long and must not call keel (enqueue, free,
    // destroy a keel object...): the C ABI forbids host functions to call
    // into the plugin, and keel answers such calls with FAILED_PRECONDITION
    // (destructors log the error and leak). So `fn` must not own the last
    // reference to a keel object either.
    [[nodiscard]] Result<void> enqueue_host_func(HostFunc fn) const;

    // Async copies. Sizes are checked: a copy that does not fit its
    // destination (or source view) is OUT_OF_RANGE and enqueues nothing.
    // A copy of 0 bytes enqueues nothing and succeeds.
    [[nodiscard]] Result<void> copy_h2d(DeviceView dst, const void* src, std::uint64_t size) const;
    // Copies all of `src` (which must fit `dst`).
    [[nodiscard]] Result<void> copy_h2d(DeviceView dst, const PinnedBuffer& src) const;
    [[nodiscard]] Result<void> copy_d2h(void* dst, DeviceView src, std::uint64_t size) const;
    // Copies all of `src` into the start of `dst` (it must fit).
    [[nodiscard]] Result<void> copy_d2h(PinnedBuffer& dst, DeviceView src) const;
    // Copies all of `src` into the start of `dst` (same device; it must fit;
    // the ranges must not overlap).
    [[nodiscard]] Result<void> copy_d2d(DeviceView dst, DeviceView src) const;
    // Copies `size` <= KEEL_INLINE_COPY_MAX (256) bytes whose source is
    // captured before this returns, so `src` may be reused at once (scalars,
    // shapes). UNIMPLEMENTED when the plugin lacks memcpy_h2d_inline (see
    // Device::supports_inline_copy); then use copy_h2d.
    [[nodiscard]] Result<void> copy_h2d_inline(DeviceView dst, const void* src,
                                               std::uint64_t size) const;
    // Sets every byte of `dst` to `value`.
    [[nodiscard]] Result<void> memset(DeviceView dst, std::uint8_t value) const;

    // Keeps `objects` alive until the stream reaches this point, then
    // destroys them on a host thread, with nobody waiting: a pipeline holds a
    // sent buffer until its send ran instead of synchronising after it. Takes
    // ownership (move objects in; a std::shared_ptr is copied, one more
    // reference). One pooled event per call and no host callback (each costs
    // about 100 us of stream latency on a GPU): releases are batched by the
    // device's shared memory machinery (DeviceMemory::for_device), which the
    // stream keeps alive from its first hold on. The objects must be
    // destructible on any thread (Send). On an empty stream, or if no event
    // can be recorded, the objects are destroyed once the stream is idle and
    // the error is returned: never early.
    template <class... T>
    [[nodiscard]] Result<void> hold(T&&... objects) const {
        static_assert(sizeof...(T) > 0, "hold() needs at least one object");
        return hold_task(memory::owning(std::forward<T>(objects)...));
    }
    // The same for what `release` captures: it runs, then is destroyed, once
    // the stream reaches this point.
    [[nodiscard]] Result<void> hold_task(memory::DeferredTask release) const;

    // Enqueues `kernel` with `args`. The plugin validates the arguments
    // (count, kinds, dtypes, sizes) and returns INVALID_ARGUMENT naming the
    // argument; buffers must be on this stream's device.
    [[nodiscard]] Result<void> launch(const Kernel& kernel, const KernelArgs& args) const;

    // Waits, releases the stream and returns its sticky error, if any. The
    // stream is empty afterwards either way.
    [[nodiscard]] Result<void> close();

    // The plugin's handle, for extensions that call the C ABI themselves
    // (never destroy it); null when empty.
    [[nodiscard]] keel_stream native() const noexcept { return handle_; }

private:
    struct HoldState;
    Stream(Device device, keel_stream handle);
    [[nodiscard]] Result<void> check(const char* where) const;
    [[nodiscard]] Result<void> check_view(const char* where, const char* role,
                                          const DeviceView& view) const;

    Device device_;
    keel_stream handle_ = nullptr;
    // The device memory that tracks this stream's holds (made on the first).
    std::unique_ptr<HoldState> holds_;
};

}  // namespace keel
