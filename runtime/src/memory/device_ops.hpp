// The device operations the memory machinery needs, and nothing more.
//
// The caching allocator, the staging pool, holds and fences are written over
// this small interface instead of over the runtime's Device/Stream types so
// that their algorithms can be tested with a deterministic fake device
// (tests decide when each event completes) and run unchanged on every plugin
// through PluginDeviceOps. It never names a vendor.
#pragma once

#include <keel/keel.h>
#include <keel/result.hpp>

#include <cstdint>

namespace keel::memory {

// Thread-safety: every member may be called from any thread concurrently,
// exactly as the C ABI's entries (implementations are Sync).
class DeviceOps {
public:
    DeviceOps() = default;
    DeviceOps(const DeviceOps&) = delete;
    DeviceOps& operator=(const DeviceOps&) = delete;
    DeviceOps(DeviceOps&&) = delete;
    DeviceOps& operator=(DeviceOps&&) = delete;
    virtual ~DeviceOps() = default;

    // ---- description (constant for the object's life) -------------------
    // Alignment of every device_alloc result (power of two).
    [[nodiscard]] virtual std::uint64_t alloc_alignment() const noexcept = 0;
    // Bytes of device memory (0 if unknown).
    [[nodiscard]] virtual std::uint64_t total_memory() const noexcept = 0;
    // Whether host_alloc returns pinned memory (otherwise staging uses
    // ordinary host memory, which is still correct).
    [[nodiscard]] virtual bool has_pinned_host_memory() const noexcept = 0;
    // Whether memcpy_h2d_inline exists.
    [[nodiscard]] virtual bool has_inline_copy() const noexcept = 0;

    // ---- raw device memory (synchronous) --------------------------------
    [[nodiscard]] virtual Result<keel_device_addr> device_alloc(std::uint64_t size) = 0;
    [[nodiscard]] virtual Result<void> device_free(keel_device_addr addr) = 0;

    // ---- host memory for staging ----------------------------------------
    [[nodiscard]] virtual Result<void*> host_alloc(std::uint64_t size) = 0;
    [[nodiscard]] virtual Result<void> host_free(void* ptr) = 0;

    // ---- events and ordering ---------------------------------------------
    [[nodiscard]] virtual Result<keel_event> event_create() = 0;
    [[nodiscard]] virtual Result<void> event_destroy(keel_event event) = 0;
    [[nodiscard]] virtual Result<void> event_record(keel_event event, keel_stream stream) = 0;
    // true when the most recent record completed. An error means the stream
    // that recorded it failed (its later work is skipped, so it will never
    // touch memory again).
    [[nodiscard]] virtual Result<bool> event_query(keel_event event) = 0;
    [[nodiscard]] virtual Result<void> event_synchronize(keel_event event) = 0;
    // Device-side ordering: work enqueued on `stream` afterwards runs after
    // the event's current record. The host does not block.
    [[nodiscard]] virtual Result<void> stream_wait_event(keel_stream stream, keel_event event) = 0;
    // Blocks until all work enqueued on `stream` completed (a fallback when an
    // event cannot be recorded, and the baseline of the benchmarks).
    [[nodiscard]] virtual Result<void> stream_synchronize(keel_stream stream) = 0;
    // Non-blocking: whether all work enqueued on `stream` so far completed.
    [[nodiscard]] virtual Result<bool> stream_query(keel_stream stream) = 0;

    // ---- asynchronous copies ---------------------------------------------
    [[nodiscard]] virtual Result<void> memcpy_h2d(keel_stream stream, keel_device_addr dst,
                                                  const void* src, std::uint64_t size) = 0;
    [[nodiscard]] virtual Result<void> memcpy_d2h(keel_stream stream, void* dst,
                                                  keel_device_addr src, std::uint64_t size) = 0;
    // The same with pageable host memory, read or written when the copy
    // executes (a moved-in vector, a host destination). The plugin stages it,
    // unless its device takes only pinned memory (keel.h 1.3): then the
    // runtime does.
    [[nodiscard]] virtual Result<void> pageable_h2d(keel_stream stream, keel_device_addr dst, const void* src,
                                                    std::uint64_t size) {
        return memcpy_h2d(stream, dst, src, size);
    }
    [[nodiscard]] virtual Result<void> pageable_d2h(keel_stream stream, void* dst, keel_device_addr src,
                                                    std::uint64_t size) {
        return memcpy_d2h(stream, dst, src, size);
    }
    // Only when has_inline_copy(); size <= KEEL_INLINE_COPY_MAX; `src` is
    // captured before return.
    [[nodiscard]] virtual Result<void> memcpy_h2d_inline(keel_stream stream, keel_device_addr dst,
                                                         const void* src, std::uint64_t size) = 0;

    // ---- checked memory (AllocatorConfig::checked) ------------------------
    // Fills [dst, dst + size) with `value`, ordered on `stream`.
    // UNIMPLEMENTED where the device cannot (checked mode then skips guard
    // bytes and poisoning).
    [[nodiscard]] virtual Result<void> memset_d8(keel_stream stream, keel_device_addr dst,
                                                 std::uint8_t value, std::uint64_t size) {
        (void)stream, (void)dst, (void)value, (void)size;
        return Error(KEEL_STATUS_UNIMPLEMENTED, "memset_d8 is not available");
    }
    // Tells a device checker what only the allocator knows: the block
    // [addr, addr + size) was freed into the cache (released) or handed to a
    // new owner (acquired). Applied at the call. Does nothing on a device
    // without a checker; an error is a finding (a double free).
    enum class BlockEvent : std::uint8_t { released, acquired };
    [[nodiscard]] virtual Result<void> annotate(BlockEvent what, keel_stream stream, keel_device_addr addr,
                                                std::uint64_t size) {
        (void)what, (void)stream, (void)addr, (void)size;
        return ok();
    }
};

}  // namespace keel::memory
