// PageableStaging: copies between a device and pageable host memory that
// keep keel.h's promise for memcpy_h2d/memcpy_d2h: the host memory is read
// (to the device) or written (to the host) when the stream executes the
// copy, in stream order, and enqueueing never waits for the device. For a
// plugin whose device can only copy from and to pinned host memory.
//
// The pipeline. A copy is cut into chunks of at most `chunk_bytes`, which
// cycle through up to `blocks_per_copy` pinned blocks lent for the whole
// copy. Each chunk is a host step (a host function on the stream) and a
// device copy between its block and the device:
//
//   to the device: step k waits until chunk k is in its block, then starts
//                  filling the blocks of chunks k+1 .. k+blocks-1 (their
//                  earlier device copies already ran: stream order), and
//                  returns; the device copy of chunk k runs while the host
//                  threads fill the next chunks.
//   to the host:   the device copy of chunk k lands in its block; step k
//                  starts copying it out and waits for the copy-out of the
//                  chunk whose block the next device copy writes.
//
// Host copies are split among a CopyPool's threads (one thread of memcpy
// from pageable memory is far slower than a host-to-device link on a
// server), and the thread running the step copies too. The last step of a
// copy gives its blocks back. A step that finds the stream failed copies
// nothing more, waits for what it started, and still gives the blocks back.
//
// Thread-safety: PageableStaging is Sync. Steps may run on any thread (a
// driver's callback thread): they make no driver call and never allocate
// pinned memory.
#pragma once

#include <keel/base/staging_config.hpp>
#include <keel/keel.h>
#include <keel/result.hpp>
#include <keel/staging/copy_pool.hpp>
#include <keel/staging/pinned_blocks.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>

namespace keel::staging {

// One stream of the plugin, as a staged copy uses it. Implementations are
// made per copy by the plugin and used by the enqueueing thread only.
class StagingStream {
public:
    // Runs `step` when the stream reaches this point; the stream's later work
    // waits until it returned. `stream_ok` is false when earlier work failed.
    // An accepted step runs exactly once, also when the stream failed.
    using Step = std::function<void(bool stream_ok)>;

    virtual ~StagingStream() = default;
    [[nodiscard]] virtual Result<void> enqueue_host_step(Step step) = 0;
    // Enqueues the device side of one chunk: `bytes` between `block` and the
    // device memory at `offset` from the start of the copy, in the copy's
    // direction.
    [[nodiscard]] virtual Result<void> enqueue_device_copy(std::uint64_t offset, void* block,
                                                           std::size_t bytes) = 0;
};

struct PageableStagingStats {
    PinnedBlocksStats blocks;
    std::uint64_t copies = 0;        // copies staged
    std::uint64_t short_copies = 0;  // copies that got fewer blocks than blocks_per_copy
    std::uint64_t refused_copies = 0;  // copies that found no block free (nothing enqueued)
    unsigned host_threads = 0;       // the CopyPool's threads (0: not started yet)
};

class PageableStaging {
public:
    // Takes config.pageable and config.copy_threads (StagingConfig's
    // defaults unless given; keel::staging::with_environment applies the
    // environment).
    PageableStaging(std::unique_ptr<PinnedMemory> memory, const StagingConfig& config = {});
    PageableStaging(const PageableStaging&) = delete;
    PageableStaging& operator=(const PageableStaging&) = delete;
    ~PageableStaging();

    // Enqueues a copy of `size` bytes from pageable `src` to the device.
    // OUT_OF_MEMORY, naming the limit, when the copies in flight hold the
    // whole capacity: nothing is enqueued.
    // On an error after part of the copy was enqueued, that part runs and its
    // blocks are never reused, but it no longer touches the host memory: the
    // host copies already started are waited for before the error returns,
    // so the caller may free or reuse `src`/`dst` at once.
    [[nodiscard]] Result<void> to_device(StagingStream& stream, const void* src, std::uint64_t size);
    // The same from the device into pageable `dst`.
    [[nodiscard]] Result<void> to_host(StagingStream& stream, void* dst, std::uint64_t size);

    // Frees the pinned blocks; call once every stream is gone (shutdown).
    // First waits (up to a few seconds) for copies whose steps are still
    // queued: a stream that failed may run them after its synchronisation
    // returned the error. If they never come, the staging is leaked rather
    // than freed under them.
    void release_all() noexcept;

    [[nodiscard]] PageableStagingStats stats() const;
    // The same, in the ABI's form (device_pageable_staging_stats): writes the
    // fields that fit out->struct_size. INVALID_ARGUMENT when `out` is null.
    [[nodiscard]] Result<void> write_stats(keel_pageable_staging_stats* out) const;
    [[nodiscard]] const PageableStagingSettings& config() const noexcept { return config_; }

private:
    [[nodiscard]] Result<void> stage(StagingStream& stream, unsigned char* host, std::uint64_t size,
                                     bool to_device);
    [[nodiscard]] CopyPool& copier();

    // The blocks, the copy threads and a count of the copies alive, which
    // the copies' steps use: on the heap so that release_all() can leave it
    // to steps that never ran.
    struct Core;

    const PageableStagingSettings config_;
    const CopyPoolConfig copy_;
    std::unique_ptr<Core> core_;  // null once leaked by release_all()
    std::atomic<std::uint64_t> copies_{0};
    std::atomic<std::uint64_t> short_copies_{0};
    std::atomic<std::uint64_t> refused_copies_{0};
    std::atomic<unsigned> host_threads_{0};
};

}  // namespace keel::staging
