// Stream::copy between memory of two devices, one of them the stream's:
// natively where the plugin copies between the pair (memcpy_peer), else
// staged by the runtime through pinned host memory of the device that reads
// the source, with a helper stream on the other device and ordering across
// the two in both directions, so the copy is this stream's work like any
// other: it runs after this stream's earlier work, and work enqueued on this
// stream afterwards runs after it (the source is read, the destination
// written). The source lives as for a copy on one device: until this stream
// passed the copy.
//
// A staged copy goes in chunks through a small ring of pinned blocks, so a
// copy of any size needs a bounded amount of pinned memory. Each slot of the
// ring is a block of each device's own pinned memory, so that neither
// device's copy needs its plugin to stage foreign host memory (which would
// hold more pinned memory per chunk in flight): the reading stream fills its
// block, the writing stream waits for that (an event: a fence), moves the
// chunk into its own block in a host function and copies it out; the reading
// stream refills a slot only after the write of the chunk before in it (a
// fence of the writer, waited for across devices). Reading chunk i+1
// overlaps writing chunk i. The blocks come from each device's cache
// (staging_blocks.hpp) and go back to it once this stream passed the copy,
// so repeated copies make no host allocation.
#include <keel/stream.hpp>

#include "../access.hpp"
#include "../fallible_reach.hpp"
#include "../memory/fence.hpp"
#include "../memory/shared_memory.hpp"
#include "../memory/transfer.hpp"
#include "bridge.hpp"
#include "paths.hpp"

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstring>
#include <memory>
#include <new>
#include <utility>
#include <vector>

namespace keel {

namespace {

// Bytes per chunk of a staged copy, and blocks in its ring: 2 let one chunk
// be read while the one before is written; 4 MiB keep the per-chunk cost
// (two cross-device orderings) small next to the copy itself.
constexpr std::uint64_t kStagedChunkBytes = 4ull << 20;
constexpr std::size_t kStagedRing = 2;

// Device -> host block of the reading device (its own host_alloc memory,
// or ordinary memory where it has none).
Result<void> read_into(const detail::DeviceSlot& device, memory::MemoryCore& core, keel_stream stream,
                       const cross_device::StagingBlock& block, keel_device_addr src, std::uint64_t bytes) {
    if (block.pinned) return device.api().memcpy_d2h(stream, block.data, src, bytes);
    return memory::enqueue_pageable_copy(
        core, stream, [&] { return core.ops().pageable_d2h(stream, block.data, src, bytes); });
}

// Host block of the writing device -> device.
Result<void> write_from(const detail::DeviceSlot& device, memory::MemoryCore& core, keel_stream stream,
                        keel_device_addr dst, const cross_device::StagingBlock& block, std::uint64_t bytes) {
    if (block.pinned) return device.api().memcpy_h2d(stream, dst, block.data, bytes);
    return memory::enqueue_pageable_copy(
        core, stream, [&] { return core.ops().pageable_h2d(stream, dst, block.data, bytes); });
}

// A chunk moved on the host from the reader's block into the writer's.
struct ChunkMove {
    void* to;
    const void* from;
    std::size_t bytes;
};

void move_chunk(void* user_data, keel_status status) noexcept {
    std::unique_ptr<ChunkMove> m(static_cast<ChunkMove*>(user_data));
    // After a failure the reader's block holds nothing worth moving.
    if (status == KEEL_STATUS_OK) std::memcpy(m->to, m->from, m->bytes);
}

keel_error* move_chunk_fallible(void* user_data, keel_status status) noexcept {
    move_chunk(user_data, status);
    return nullptr;
}

// Enqueues the move on the writer's stream. Fallible where the plugin has it:
// then it is part of the stream's work that fills the block the next copy
// reads (a plain host function is a callback, keel.h 1.4), counted as a
// user's fallible host function is (settle_fallible_host_funcs).
Result<void> enqueue_move(const detail::DeviceSlot& device, keel_stream stream, const cross_device::StagingBlock& to,
                          const cross_device::StagingBlock& from, std::uint64_t bytes) {
    auto* m = new (std::nothrow) ChunkMove{to.data, from.data, static_cast<std::size_t>(bytes)};
    if (m == nullptr) return Error(KEEL_STATUS_OUT_OF_MEMORY, "[Stream::copy] out of host memory");
    const detail::PluginApi& api = device.api();
    Result<void> r = api.has_fallible_host_func() ? detail::fallible::enqueue_counted(api, stream, &move_chunk_fallible, m)
                                                  : api.stream_enqueue_host_func(stream, &move_chunk, m);
    if (!r.ok()) delete m;
    return r;
}

// One slot of the ring: a block of the reading device, one of the writing device.
struct RingSlot {
    cross_device::StagingBlock in;
    cross_device::StagingBlock out;
};

// The ring of one copy; gives its blocks back to their devices' caches when
// destroyed (held by the copy's stream until it passed the copy). It holds
// both devices, so their plugins and caches outlive it. Move-only.
class Ring {
public:
    Ring(Device reading, Device writing) noexcept : reading_(std::move(reading)), writing_(std::move(writing)) {}
    Ring(const Ring&) = delete;
    Ring& operator=(const Ring&) = delete;
    Ring(Ring&& other) noexcept = default;
    Ring& operator=(Ring&&) = delete;
    ~Ring() {
        if (slots_.empty()) return;  // also moved-from
        const detail::DeviceSlot& in = detail::Access::slot(reading_);
        const detail::DeviceSlot& out = detail::Access::slot(writing_);
        for (const RingSlot& slot : slots_) {
            in.staging_blocks->give_back(in.api(), in.handle, slot.in);
            out.staging_blocks->give_back(out.api(), out.handle, slot.out);
        }
    }

    // Adds a slot of `bytes` per block.
    [[nodiscard]] Result<void> add(std::uint64_t bytes) {
        const detail::DeviceSlot& in = detail::Access::slot(reading_);
        const detail::DeviceSlot& out = detail::Access::slot(writing_);
        KEEL_TRY_ASSIGN(const cross_device::StagingBlock a, in.staging_blocks->acquire(in.api(), in.handle, bytes));
        auto b = out.staging_blocks->acquire(out.api(), out.handle, bytes);
        if (!b.ok()) {
            in.staging_blocks->give_back(in.api(), in.handle, a);
            return std::move(b).error();
        }
        try {
            slots_.push_back(RingSlot{a, *b});
        } catch (const std::bad_alloc&) {
            in.staging_blocks->give_back(in.api(), in.handle, a);
            out.staging_blocks->give_back(out.api(), out.handle, *b);
            return Error(KEEL_STATUS_OUT_OF_MEMORY, "[Stream::copy] out of host memory");
        }
        return ok();
    }
    [[nodiscard]] std::vector<RingSlot>& slots() noexcept { return slots_; }

private:
    Device reading_;
    Device writing_;
    std::vector<RingSlot> slots_;
};

// One side of a staged copy: a stream of a device and that device's memory instance.
struct Side {
    const detail::DeviceSlot& device;
    keel_stream stream;
    const std::shared_ptr<memory::MemoryCore>& core;
};

// Enqueues the chunks of a staged copy of `bytes` from `src` (read by
// `reader`) to `dst` (written by `writer`) through `ring`. The reader's
// first read and the writer's first write are ordered by the caller.
Result<void> enqueue_chunks(const Side& reader, const Side& writer, std::vector<RingSlot>& ring,
                            keel_device_addr dst, keel_device_addr src, std::uint64_t bytes) {
    // The writer's point after the last write from each block.
    std::array<Fence, kStagedRing> written;
    const std::uint64_t chunks = (bytes + kStagedChunkBytes - 1) / kStagedChunkBytes;
    for (std::uint64_t i = 0; i < chunks; ++i) {
        RingSlot& slot = ring[i % ring.size()];
        Fence& emptied = written[i % ring.size()];
        const std::uint64_t offset = i * kStagedChunkBytes;
        const std::uint64_t n = std::min(kStagedChunkBytes, bytes - offset);
        if (!emptied.empty()) {
            KEEL_TRY(cross_device::wait_event(reader.device, reader.stream, writer.device,
                                              detail::Access::event(emptied)));
        }
        KEEL_TRY(read_into(reader.device, *reader.core, reader.stream, slot.in, src + offset, n));
        KEEL_TRY(cross_device::order_after(writer.device, writer.stream, reader.device, reader.stream, reader.core));
        KEEL_TRY(enqueue_move(writer.device, writer.stream, slot.out, slot.in, n));
        KEEL_TRY(write_from(writer.device, *writer.core, writer.stream, dst + offset, slot.out, n));
        if (i + ring.size() < chunks) {
            KEEL_TRY_ASSIGN(emptied, memory::record_fence(writer.core, writer.stream));
        }
    }
    return ok();
}

}  // namespace

Result<void> Stream::copy_across(DeviceView dst, DeviceView src) const {
    const detail::DeviceSlot& mine = detail::Access::slot(device_);
    const detail::DeviceSlot& to = *detail::Access::slot(dst);
    const detail::DeviceSlot& from = *detail::Access::slot(src);
    const std::uint64_t bytes = src.size();
    if (cross_device::peer_copy(from, to))
        return mine.api().memcpy_peer(handle_, to.handle, dst.address(), from.handle, src.address(), bytes);
    if (bytes == 0) return ok();

    const bool writes_here = &to == &mine;
    const detail::DeviceSlot& other = writes_here ? from : to;
    Device other_device = detail::Access::device(other.plugin->shares().handle(other));
    KEEL_TRY_ASSIGN(const std::shared_ptr<memory::MemoryCore>* my_core, detail::Access::core(*this));
    KEEL_TRY_ASSIGN(std::shared_ptr<memory::MemoryCore> other_core, memory::shared_core(other_device, nullptr));
    // The ring: pinned memory of both devices.
    const Device& reading_device = writes_here ? other_device : device_;
    const Device& writing_device = writes_here ? device_ : other_device;
    const std::uint64_t chunks = (bytes + kStagedChunkBytes - 1) / kStagedChunkBytes;
    const std::uint64_t block_bytes = std::min(bytes, kStagedChunkBytes);
    Ring ring(reading_device, writing_device);
    for (std::uint64_t k = 0; k < std::min<std::uint64_t>(kStagedRing, chunks); ++k) KEEL_TRY(ring.add(block_bytes));
    cross_device::HelperStreams& helpers = *other.helpers;
    KEEL_TRY_ASSIGN(keel_stream helper, helpers.acquire(other.api(), other.handle));

    const Side here{mine, handle_, *my_core};
    const Side there{other, helper, other_core};
    const Side& reader = writes_here ? there : here;
    const Side& writer = writes_here ? here : there;
    Result<void> r = ok();
    // The helper starts after this stream's earlier work: when it reads, at
    // once; when it writes, through its first wait for this stream's read.
    if (writes_here) r = cross_device::order_after(there.device, there.stream, here.device, here.stream, here.core);
    if (r.ok()) r = enqueue_chunks(reader, writer, ring.slots(), dst.address(), src.address(), bytes);
    // This stream's later work runs after the helper's writes.
    if (r.ok() && !writes_here)
        r = cross_device::order_after(here.device, here.stream, there.device, there.stream, there.core);
    if (!r.ok()) {
        // Part of it may be enqueued and not ordered before this stream's
        // later work: let it finish before the staging memory goes.
        (void)other.api().stream_synchronize(helper);
        (void)mine.api().stream_synchronize(handle_);
    }
    Result<void> given_back = helpers.enqueue_give_back(other.api(), helper);
    // The ring (back to the caches then) and the other device's plugin stay
    // until this stream passed the copy.
    Result<void> held = hold(std::move(ring), std::move(other_device), std::move(other_core));
    if (!r.ok()) return std::move(r).error().context("Stream::copy from " + from.name + " to " + to.name);
    KEEL_TRY(std::move(given_back));
    return held;
}

}  // namespace keel
