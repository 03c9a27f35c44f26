#include "memory/staged_upload.hpp"

#include "logging.hpp"
#include "memory/event_wait.hpp"
#include "memory/transfer.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

namespace keel::memory {

StagedUpload::StagedUpload(MemoryCore& core, keel_stream stream) noexcept
    : core_(core), stream_(stream), recycle_(core.staging().config().ring_chunks > 0) {}

// Dropping the staging chunks first waits for the pool's slices: the source
// is not read once this returns.
StagedUpload::~StagedUpload() {
    drop_staging();
    retire_in_flight();
}

Result<void> StagedUpload::run(keel_device_addr dst, std::span<const std::byte> src) {
    const StagingConfig& config = core_.staging().config();
    const std::uint64_t chunk_bytes = std::max<std::uint64_t>(config.chunk_bytes, kSmallestStagingBlock);
    in_flight_.reserve(std::min<std::uint64_t>((src.size() + chunk_bytes - 1) / chunk_bytes,
                                               std::uint64_t{config.ring_chunks} + 1));
    if (recycle_ && src.size() > std::uint64_t{config.ring_chunks} * chunk_bytes) {
        // An idle stream will run nothing but this copy's chunks ahead of
        // them, so reusing the oldest block never waits on unrelated work.
        auto idle = core_.ops().stream_query(stream_);
        device_on_this_copy_ = idle.ok() && *idle;
    }
    std::size_t ahead = 1;
    if (core_.staging().copies_in_parallel(std::min(chunk_bytes, std::uint64_t{src.size()}))) {
        pool_ = &core_.staging().copier();
        if (pool_->threads() > 1) ahead = std::max<std::uint32_t>(config.stage_ahead, 1);
    }
    bool waited_for_staging = false;
    for (std::uint64_t offset = 0; offset < src.size();) {
        const std::uint64_t n = std::min<std::uint64_t>(chunk_bytes, src.size() - offset);
        auto next = next_chunk(n);
        if (!next.ok()) {
            if (next.error().code() != KEEL_STATUS_OUT_OF_MEMORY) return std::move(next).error();
            // No staging memory: wait for this stream's staged copies to
            // give theirs back; if that frees none, go direct.
            if (!waited_for_staging) {
                waited_for_staging = true;
                KEEL_TRY(wait_for_staging());
                continue;
            }
            KEEL_TRY(wait_for_staging());
            return copy_direct(dst + offset, src.subspan(offset));
        }
        waited_for_staging = false;
        Staging chunk{*next, dst + offset, n, std::make_unique<staging::CopyBatch>()};
        if (pool_ != nullptr) pool_->copy_async(chunk.chunk.block.ptr, src.data() + offset, n, *chunk.batch);
        else std::memcpy(chunk.chunk.block.ptr, src.data() + offset, n);
        staging_.push_back(std::move(chunk));
        if (staging_.size() >= ahead) KEEL_TRY(enqueue_oldest());
        offset += n;
    }
    while (!staging_.empty()) KEEL_TRY(enqueue_oldest());
    return ok();
}

Result<void> StagedUpload::enqueue_oldest() {
    Staging s = std::move(staging_.front());
    staging_.pop_front();
    if (pool_ != nullptr) pool_->wait(*s.batch);
    Chunk chunk = s.chunk;
    auto copied = core_.ops().memcpy_h2d(stream_, s.dst, chunk.block.ptr, s.size);
    if (!copied.ok()) {
        core_.events().release(chunk.event);
        core_.staging().release(chunk.block);  // never enqueued
        return std::move(copied).error().context("Stream::copy");
    }
    auto recorded = core_.ops().event_record(chunk.event, stream_);
    if (!recorded.ok()) {
        // The copy may read the block until the stream is done with it.
        core_.events().release(chunk.event);
        auto synced = core_.ops().stream_synchronize(stream_);
        if (!synced.ok()) detail::log_debug("[Stream::copy] " + synced.error().message());
        core_.staging().release(chunk.block);
        return std::move(recorded).error().context("Stream::copy");
    }
    chunk.seq = core_.tracker().next_seq(stream_);
    in_flight_.push_back(chunk);
    return ok();
}

void StagedUpload::drop_staging() noexcept {
    while (!staging_.empty()) {
        Staging& s = staging_.front();
        s.batch.reset();  // waits for its slices
        core_.events().release(s.chunk.event);
        core_.staging().release(s.chunk.block);
        staging_.pop_front();
    }
}

Result<void> StagedUpload::wait_for_staging() {
    while (!staging_.empty()) KEEL_TRY(enqueue_oldest());
    retire_in_flight();
    recycle_ = false;
    auto synced = core_.ops().stream_synchronize(stream_);
    if (!synced.ok()) return std::move(synced).error().context("Stream::copy");
    core_.tracker().sweep();
    return ok();
}

Result<void> StagedUpload::copy_direct(keel_device_addr dst, std::span<const std::byte> rest) {
    core_.staging().count_direct_copy();
    auto copied = enqueue_pageable_copy(
        core_, stream_, [&] { return core_.ops().pageable_h2d(stream_, dst, rest.data(), rest.size()); });
    if (!copied.ok()) return std::move(copied).error().context("Stream::copy");
    // The device reads the source when the copy runs: wait for it.
    auto synced = core_.ops().stream_synchronize(stream_);
    if (!synced.ok()) return std::move(synced).error().context("Stream::copy");
    return ok();
}

Result<StagedUpload::Chunk> StagedUpload::next_chunk(std::uint64_t size) {
    const std::size_t ring = core_.staging().config().ring_chunks;
    if (recycle_ && in_flight_.size() - oldest_ >= ring) {
        const Chunk oldest = in_flight_[oldest_];
        if (oldest.block.capacity >= size && completes_soon(oldest.event)) {
            ++oldest_;
            // Compact now and then so the vector stays ring-sized.
            if (oldest_ >= ring) {
                in_flight_.erase(in_flight_.begin(), in_flight_.begin() + static_cast<std::ptrdiff_t>(oldest_));
                oldest_ = 0;
            }
            core_.staging().count_ring_reuse();
            return oldest;
        }
        // The stream is busy elsewhere: do not stall the host on it.
        recycle_ = false;
        core_.staging().count_ring_give_up();
        retire_in_flight();
    }
    KEEL_TRY_ASSIGN(StagingBlock block, core_.staging().acquire(stream_, size));
    auto event = core_.events().acquire();
    if (!event.ok()) {
        core_.staging().release(block);
        return std::move(event).error().context("Stream::copy");
    }
    return Chunk{block, *event, 0};
}

bool StagedUpload::completes_soon(keel_event event) {
    if (device_on_this_copy_) {
        // Only this copy's chunks are ahead of the event: block (the device
        // still has the rest of the ring to copy meanwhile, which hides the
        // wake-up), rather than poll and compete for a core with it.
        return core_.ops().event_synchronize(event).ok();
    }
    const auto deadline = std::chrono::steady_clock::now() + core_.staging().config().ring_wait;
    for (;;) {
        auto done = core_.ops().event_query(event);
        if (!done.ok()) return false;  // the stream failed: the tracker sorts it out
        if (*done) {
            device_on_this_copy_ = true;
            return true;
        }
        if (std::chrono::steady_clock::now() >= deadline) return false;
        std::this_thread::yield();
    }
}

void StagedUpload::retire_in_flight() noexcept {
    StagingPool* staging = &core_.staging();
    for (std::size_t i = oldest_; i < in_flight_.size(); ++i) {
        const Chunk c = in_flight_[i];
        try {
            core_.tracker().track(stream_, c.seq, c.event, /*owns_event=*/true, WorkKind::staging,
                                  HostFunc([staging, block = c.block] { staging->release(block); }));
        } catch (...) {
            (void)wait_for_event(core_.ops(), c.event);
            core_.events().release(c.event);
            staging->release(c.block);
        }
    }
    in_flight_.clear();
    oldest_ = 0;
}

}  // namespace keel::memory
