// Stream: an in-order queue of work on one device, and everything that is
// enqueued on it: copies, memset, kernels, host functions, holds and fences.
#pragma once

#include <keel/buffer.hpp>
#include <keel/device.hpp>
#include <keel/export.hpp>
#include <keel/fence.hpp>
#include <keel/host_copy.hpp>
#include <keel/host_func.hpp>
#include <keel/keel.h>
#include <keel/pinned_buffer.hpp>
#include <keel/result.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <ranges>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

namespace keel {

class MemoryPool;
class Event;
class Kernel;
class KernelArgs;

// A contiguous host range of trivially copyable elements (std::vector,
// std::array, std::span, std::string...), the host side of a staged copy.
template <class R>
concept HostRange = std::ranges::contiguous_range<R> && std::ranges::sized_range<R> &&
                    std::is_trivially_copyable_v<std::ranges::range_value_t<R>>;

// A host range a copy may write into: not const, and not a temporary that
// would be gone before the copy is delivered (an lvalue, or a view such as
// std::span).
template <class R>
concept WritableHostRange =
    HostRange<R> && std::ranges::borrowed_range<R> &&
    !std::is_const_v<std::remove_reference_t<std::ranges::range_reference_t<R>>>;

// Owns one plugin stream (stream_create ... stream_destroy).
//
// Work enqueued on a stream runs in enqueue order, asynchronously: every
// enqueue call returns at once and the work runs later. Errors of the
// enqueue itself (bad arguments, sizes that do not fit, memory of another
// device) come back from the call, which then enqueued nothing; an error
// while the work runs puts the stream in an error state that synchronize(),
// query(), events recorded after it and later enqueues report.
//
// Memory: a stream uses one memory instance (MemoryPool) for its
// buffers, staged copies, holds and fences. Stream::create(device) uses the
// device's shared instance, bound on the first call that needs it (so a
// stream that never allocates or stages costs nothing extra);
// Stream::create(memory) uses `memory`, e.g. a private instance with its
// own configuration. The stream keeps its instance alive.
//
// Move-only. A moved-from stream is empty: every call fails with
// INVALID_ARGUMENT. The destructor waits for the enqueued work and releases
// the stream; a sticky error it finds is logged (use close() to see it).
//
// Threads: may be sent to another thread. Enqueue members are const and may
// be called from several threads at once; work from several threads is
// ordered in the order the calls return. Moving, close() and destruction
// need exclusive access.
class KEEL_API Stream {
public:
    // A stream on `device` that uses the device's shared memory instance.
    [[nodiscard]] static Result<Stream> create(const Device& device);
    // A stream on memory.device() that uses `memory`.
    [[nodiscard]] static Result<Stream> create(const MemoryPool& memory);

    Stream(const Stream&) = delete;
    Stream& operator=(const Stream&) = delete;
    Stream(Stream&& other) noexcept;
    Stream& operator=(Stream&& other) noexcept;
    ~Stream();

    [[nodiscard]] const Device& device() const noexcept { return device_; }
    [[nodiscard]] bool empty() const noexcept { return handle_ == nullptr; }
    // The memory instance this stream uses (binding the device's shared
    // one if it had none yet): for its statistics and configuration.
    [[nodiscard]] Result<MemoryPool> memory() const;

    // ---- waiting ------------------------------------------------------------

    // Blocks until all work enqueued before this call has run; returns the
    // stream's error, if any.
    [[nodiscard]] Result<void> synchronize() const;
    // Non-blocking: true when all enqueued work has run.
    [[nodiscard]] Result<bool> query() const;

    // ---- ordering between streams (on the device: the host never blocks) ---

    // A fence at the current end of this stream's work.
    [[nodiscard]] Result<Fence> fence() const;
    // Work enqueued on this stream after this call runs after `fence`'s
    // point (nothing for an empty fence).
    [[nodiscard]] Result<void> wait(const Fence& fence) const;
    // Work enqueued on this stream after this call runs after `event`'s most
    // recent record (as of this call: re-recording it later changes nothing).
    [[nodiscard]] Result<void> wait(const Event& event) const;
    // One-shot fence: work enqueued on this stream from now on runs after
    // everything enqueued on `from` so far. A no-op for the stream itself.
    [[nodiscard]] Result<void> order_after(const Stream& from) const;
    // The three take a fence, event or stream of ANY device: on the device
    // where its plugin waits across its devices (waits_natively()), else
    // bridged by the runtime with a host function on each side, which holds
    // this stream back until the awaited work ran; the calling thread never
    // blocks. A failure of the awaited work fails this stream (where its
    // plugin lets a host function fail a stream, ABI 1.4).

    // ---- copies: copy(dst, src) copies all of src into the start of dst ----
    //
    // The types pick the path. Sizes are checked: src must fit dst
    // (OUT_OF_RANGE otherwise), views must be of this stream's device
    // (INVALID_ARGUMENT), a null host pointer with a nonzero size is
    // INVALID_ARGUMENT; an error enqueues nothing. A copy of 0 bytes
    // enqueues nothing and succeeds.

    // Host -> device from any contiguous host range, staged: the bytes are
    // copied into pinned staging (or, for at most KEEL_INLINE_COPY_MAX bytes,
    // captured by the plugin's inline copy) before this returns, so `src`
    // may be changed or destroyed at once.
    template <HostRange R>
    [[nodiscard]] Result<void> copy(DeviceView dst, const R& src) const {
        return copy_in(dst, std::as_bytes(std::span(std::ranges::data(src), std::ranges::size(src))), {});
    }
    // Host -> device taking the vector (moved in): no staging copy, the
    // device reads its storage and it is destroyed once the copy ran.
    template <class T>
        requires std::is_trivially_copyable_v<T>
    [[nodiscard]] Result<void> copy(DeviceView dst, std::vector<T>&& src) const {
        // Moving a std::vector keeps its storage, so the bytes stay valid.
        const std::span<const std::byte> bytes = std::as_bytes(std::span(src));
        return copy_in(dst, bytes, detail::owning(std::move(src)));
    }
    // Host -> device from pinned memory, directly (DMA). `src` is read when
    // the copy runs: keep it alive and unchanged until then.
    [[nodiscard]] Result<void> copy(DeviceView dst, const PinnedBuffer& src) const;
    // Device -> device. On this stream's device the ranges must not overlap.
    // Between two devices, one of them this stream's, copy_path() says how:
    // the plugin's peer copy, or staged by the runtime through pinned host
    // memory (with a helper stream on the other device). Either way it is
    // this stream's work: it runs after the stream's earlier work (order the
    // other device's producer in with wait() first), later work of the
    // stream sees it done, and `src` must live until the stream passed it
    // (record_stream() it on this stream, or hold() it). A view of neither
    // device is INVALID_ARGUMENT.
    [[nodiscard]] Result<void> copy(DeviceView dst, DeviceView src) const;
    // Device -> pinned memory, directly (DMA). `dst` is written when the
    // copy runs: read it after synchronizing (or an event).
    [[nodiscard]] Result<void> copy(PinnedBuffer& dst, DeviceView src) const;
    // The same with a part of a pinned buffer (a staging ring's slot): all
    // of `dst` from `src` at byte `offset`, or all of `src` into `dst` at
    // `offset`; a range past the buffer's end is OUT_OF_RANGE.
    [[nodiscard]] Result<void> copy(DeviceView dst, const PinnedBuffer& src, std::uint64_t offset) const;
    [[nodiscard]] Result<void> copy(PinnedBuffer& dst, std::uint64_t offset, DeviceView src) const;
    // Device -> host range: the device writes `dst` when the copy executes
    // (no staging in the runtime). Keep `dst` valid and untouched until
    // HostCopy::wait() returned; dropping the HostCopy waits for the copy.
    template <WritableHostRange R>
    [[nodiscard]] Result<HostCopy> copy(R&& dst, DeviceView src) const {
        return copy_out(std::as_writable_bytes(std::span(std::ranges::data(dst), std::ranges::size(dst))),
                        src);
    }
    // Device -> host into a new vector of src.size() / sizeof(T) elements
    // (src.size() must be a multiple of sizeof(T)); HostFuture::get() waits
    // and hands it over. Dropping the future never blocks.
    template <class T>
        requires std::is_trivially_copyable_v<T> && std::is_default_constructible_v<T>
    [[nodiscard]] Result<HostFuture<T>> copy_to_vector(DeviceView src) const {
        KEEL_TRY(check_elements(src, sizeof(T)));
        std::vector<T> data(static_cast<std::size_t>(src.size() / sizeof(T)));
        KEEL_TRY_ASSIGN(HostCopy copy, copy_out(std::as_writable_bytes(std::span(data)), src));
        return HostFuture<T>(std::move(data), std::move(copy));
    }

    // Sets every byte of `dst` to `value`.
    [[nodiscard]] Result<void> memset(DeviceView dst, std::uint8_t value) const;

    // Enqueues `kernel` with `args`. The plugin validates the arguments
    // (count, kinds, dtypes, sizes) and returns INVALID_ARGUMENT naming the
    // argument; buffers must be on this stream's device.
    [[nodiscard]] Result<void> launch(const Kernel& kernel, const KernelArgs& args) const;

    // ---- lifetimes and host work -------------------------------------------

    // Keeps `objects` alive until the stream reaches this point, then
    // destroys them on a host thread, with nobody waiting: a pipeline holds a
    // sent buffer until its send ran instead of synchronising after it. Takes
    // ownership (move objects in; a std::shared_ptr is copied, one more
    // reference). One pooled event per call and no host callback (each costs
    // about 100 us of stream latency on a GPU): releases are batched by the
    // stream's memory instance. The objects must be destructible on any
    // thread (Send). On an empty stream, or if no event can be recorded, the
    // objects are destroyed once the stream is idle and the error is
    // returned: never early.
    template <class... T>
    [[nodiscard]] Result<void> hold(T&&... objects) const {
        static_assert(sizeof...(T) > 0, "hold() needs at least one object");
        return hold_func(detail::owning(std::forward<T>(objects)...));
    }

    // Runs `fn` on a plugin thread when the stream reaches this point. The
    // stream owns `fn` from the call on and destroys it after it ran, also
    // when the stream is in an error state; if the enqueue fails, `fn` is
    // destroyed before this returns and never runs.
    // `fn` must not block for long and must not call keel (enqueue, free,
    // destroy a keel object...): the C ABI forbids host functions to call
    // into the plugin, and keel answers such calls with FAILED_PRECONDITION
    // (destructors log the error and leak). So `fn` must not own the last
    // reference to a keel object either; hand such objects to hold().
    // A callable returning Result<void> fails the stream with its error
    // when host_funcs_can_fail(): as a failed operation at that point,
    // sticky (synchronize, query, events recorded after it and later
    // enqueues report it; later work is skipped). Where the plugin cannot
    // (ABI before 1.4, or without the entry) the error is logged and the
    // stream goes on.
    [[nodiscard]] Result<void> enqueue_host_func(HostFunc fn) const;
    // Whether a host function's error can fail this stream (false for an
    // empty stream).
    [[nodiscard]] bool host_funcs_can_fail() const noexcept;

    // Waits, releases the stream and returns its sticky error, if any. The
    // stream is empty afterwards either way.
    [[nodiscard]] Result<void> close();

    // The driver's queue behind this stream (see NativeHandle): work
    // submitted to it is ordered with this stream's keel work, both ways,
    // in submission order. Valid until the stream is closed or destroyed.
    // UNIMPLEMENTED where there is none (the CPU plugin) or the plugin
    // predates ABI 1.1.
    [[nodiscard]] Result<NativeHandle> native_handle() const;

private:
    friend struct detail::Access;
    struct Memory;  // the memory instance, bound once

    KEEL_LOCAL Stream(Device device, keel_stream handle, std::unique_ptr<Memory> memory) noexcept;
    // Host -> device of `src` into `dst`: staged when `keep_alive` is empty,
    // else straight from `src`, which `keep_alive` owns until the copy ran.
    [[nodiscard]] Result<void> copy_in(DeviceView dst, std::span<const std::byte> src,
                                       HostFunc keep_alive) const;
    [[nodiscard]] Result<HostCopy> copy_out(std::span<std::byte> dst, DeviceView src) const;
    // Pinned memory into or out of the device (`offset` none: the whole
    // source buffer).
    [[nodiscard]] Result<void> copy_pinned_in(DeviceView dst, const PinnedBuffer& src,
                                              std::optional<std::uint64_t> offset) const;
    [[nodiscard]] Result<void> copy_pinned_out(PinnedBuffer& dst, std::uint64_t offset, DeviceView src) const;
    [[nodiscard]] Result<void> hold_func(HostFunc release) const;
    // copy(dst, src) with one side on another device (cross_device/stream_copy.cpp).
    [[nodiscard]] KEEL_LOCAL Result<void> copy_across(DeviceView dst, DeviceView src) const;
    [[nodiscard]] Result<void> check_elements(const DeviceView& src, std::size_t element_size) const;

    Device device_;
    keel_stream handle_ = nullptr;
    std::unique_ptr<Memory> memory_;
};

}  // namespace keel
