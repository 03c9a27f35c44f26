#include "memory/transfer.hpp"

#include "access.hpp"
#include "memory/hold.hpp"
#include "memory/staged_upload.hpp"

#include <algorithm>
#include <cstring>

namespace keel {

namespace memory {

namespace {

// Scalars and shapes: the plugin captures up to KEEL_INLINE_COPY_MAX bytes at
// the call, so nothing has to outlive it. true when the copy was enqueued that
// way; false when it does not apply (too large, disabled, or the plugin lacks
// the entry).
Result<bool> try_inline_copy(MemoryCore& core, keel_stream stream, keel_device_addr dst,
                             std::span<const std::byte> src) {
    DeviceOps& ops = core.ops();
    if (src.size() > KEEL_INLINE_COPY_MAX || !core.staging().config().inline_small_copies ||
        !ops.has_inline_copy())
        return false;
    auto r = ops.memcpy_h2d_inline(stream, dst, src.data(), src.size());
    if (r.ok()) {
        core.staging().count_inline_copy();
        return true;
    }
    if (r.error().code() == KEEL_STATUS_UNIMPLEMENTED) return false;  // absent after all
    return std::move(r).error().context("Stream::copy");
}

}  // namespace

Result<void> copy_to_device(MemoryCore& core, keel_stream stream, keel_device_addr dst,
                            std::span<const std::byte> src) {
    if (src.empty()) return ok();
    if (stream == nullptr) return Error(KEEL_STATUS_INVALID_ARGUMENT, "[Stream::copy] stream is null");
    KEEL_TRY_ASSIGN(const bool inlined, try_inline_copy(core, stream, dst, src));
    if (inlined) return ok();
    return StagedUpload(core, stream).run(dst, src);
}

Result<void> copy_to_device_owned(MemoryCore& core, keel_stream stream, keel_device_addr dst,
                                  std::span<const std::byte> src, HostFunc keep_alive) {
    if (src.empty()) return ok();
    if (stream == nullptr) return Error(KEEL_STATUS_INVALID_ARGUMENT, "[Stream::copy] stream is null");
    KEEL_TRY_ASSIGN(const bool inlined, try_inline_copy(core, stream, dst, src));
    if (inlined) return ok();  // captured: keep_alive may go now
    auto copied = core.ops().memcpy_h2d(stream, dst, src.data(), src.size());
    if (!copied.ok()) return std::move(copied).error().context("Stream::copy");
    return hold_task(core, stream, std::move(keep_alive));
}

Result<HostCopy> copy_from_device(const std::shared_ptr<MemoryCore>& core_ptr, keel_stream stream,
                                  std::span<std::byte> dst, keel_device_addr src) {
    HostCopy copy;
    if (dst.empty()) return copy;
    if (stream == nullptr) return Error(KEEL_STATUS_INVALID_ARGUMENT, "[Stream::copy] stream is null");
    MemoryCore& core = *core_ptr;
    detail::Access::memory(copy) = core_ptr;
    detail::Access::stream(copy) = stream;
    detail::Access::destination(copy) = dst.data();
    std::vector<CopyChunk>& chunks = detail::Access::chunks(copy);
    DeviceOps& ops = core.ops();
    StagingPool& staging = core.staging();
    const std::uint64_t chunk = std::max<std::uint64_t>(staging.config().chunk_bytes, 4 * KiB);
    chunks.reserve((dst.size() + chunk - 1) / chunk);
    for (std::uint64_t offset = 0; offset < dst.size(); offset += chunk) {
        const std::uint64_t n = std::min<std::uint64_t>(chunk, dst.size() - offset);
        // On error, `copy` is dropped: chunks already enqueued are abandoned
        // (their staging comes back when the device is done).
        auto acquired = staging.acquire(stream, n);
        if (!acquired.ok() && acquired.error().code() == KEEL_STATUS_OUT_OF_MEMORY) {
            // Pinned memory ran out: wait for this stream's staged copies to
            // give theirs back; failing that, the device writes straight into
            // `dst` (then dropping the HostCopy waits for it).
            auto synced = ops.stream_synchronize(stream);
            if (!synced.ok()) return std::move(synced).error().context("Stream::copy");
            core.tracker().sweep();
            acquired = staging.acquire(stream, n);
            if (!acquired.ok() && acquired.error().code() == KEEL_STATUS_OUT_OF_MEMORY) {
                staging.count_direct_copy();
                acquired = StagingBlock{};
            }
        }
        if (!acquired.ok()) return std::move(acquired).error();
        const StagingBlock block = *acquired;
        auto event = core.events().acquire();
        if (!event.ok()) {
            staging.release(block);
            return std::move(event).error().context("Stream::copy");
        }
        void* landing = block.ptr != nullptr ? block.ptr : static_cast<void*>(dst.data() + offset);
        auto copied = ops.memcpy_d2h(stream, landing, src + offset, n);
        if (copied.ok()) copied = ops.event_record(*event, stream);
        if (!copied.ok()) {
            core.events().release(*event);
            // The copy may have been enqueued without its event: wait for it.
            (void)ops.stream_synchronize(stream);
            staging.release(block);
            return std::move(copied).error().context("Stream::copy");
        }
        chunks.push_back(CopyChunk{block, *event, core.tracker().next_seq(), offset, n});
    }
    return copy;
}

}  // namespace memory

HostCopy::HostCopy() noexcept = default;

HostCopy::HostCopy(HostCopy&& other) noexcept
    : memory_(std::move(other.memory_)),
      stream_(std::exchange(other.stream_, nullptr)),
      dst_(std::exchange(other.dst_, nullptr)),
      chunks_(std::move(other.chunks_)) {
    other.chunks_.clear();
}

HostCopy& HostCopy::operator=(HostCopy&& other) noexcept {
    if (this != &other) {
        abandon();
        memory_ = std::move(other.memory_);
        stream_ = std::exchange(other.stream_, nullptr);
        dst_ = std::exchange(other.dst_, nullptr);
        chunks_ = std::move(other.chunks_);
        other.chunks_.clear();
    }
    return *this;
}

HostCopy::~HostCopy() { abandon(); }

Result<bool> HostCopy::ready() {
    if (chunks_.empty()) return true;
    auto done = memory_->ops().event_query(chunks_.back().event);
    if (!done.ok()) return std::move(done).error().context("HostCopy::ready");
    return *done;
}

Result<void> HostCopy::wait() {
    if (chunks_.empty()) {
        memory_.reset();
        return ok();
    }
    Result<void> result = ok();
    memory::StagingPool& staging = memory_->staging();
    // Chunk by chunk: the pool's threads copy a chunk out of staging while
    // the device still writes later ones.
    staging::CopyPool* pool = nullptr;
    if (staging.copies_in_parallel(chunks_.front().size)) pool = &staging.copier();
    {
        staging::CopyBatch batch;
        for (memory::CopyChunk& c : chunks_) {
            auto waited = memory_->ops().event_synchronize(c.event);
            if (!waited.ok()) {
                if (result.ok()) result = std::move(waited).error().context("HostCopy::wait");
                continue;
            }
            if (c.block.ptr == nullptr) continue;  // the device wrote dst directly
            if (pool != nullptr) pool->copy_async(dst_ + c.offset, c.block.ptr, c.size, batch);
            else std::memcpy(dst_ + c.offset, c.block.ptr, c.size);
        }
        if (pool != nullptr) pool->wait(batch);
    }
    for (memory::CopyChunk& c : chunks_) {
        memory_->events().release(c.event);
        staging.release(c.block);
    }
    chunks_.clear();
    memory_.reset();
    return result;
}

void HostCopy::abandon() noexcept {
    if (chunks_.empty()) {
        memory_.reset();
        return;
    }
    memory::MemoryCore& core = *memory_;
    for (memory::CopyChunk& c : chunks_) {
        memory::StagingPool* staging = &core.staging();
        const memory::StagingBlock block = c.block;
        if (block.ptr == nullptr) {
            // The device writes the destination itself: wait for it.
            (void)core.ops().event_synchronize(c.event);
            core.events().release(c.event);
            continue;
        }
        try {
            core.tracker().track(stream_, c.seq, c.event, /*owns_event=*/true, memory::WorkKind::staging,
                                 HostFunc([staging, block] { staging->release(block); }));
        } catch (...) {
            (void)core.ops().event_synchronize(c.event);
            core.events().release(c.event);
            staging->release(block);
        }
    }
    chunks_.clear();
    memory_.reset();
}

}  // namespace keel
