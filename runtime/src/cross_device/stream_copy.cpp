// Stream::copy between memory of two devices, one of them the stream's:
// natively where the plugin copies between the pair (memcpy_peer), else
// staged by the runtime through pinned host memory of the device that reads
// the source, with a helper stream on the other device and ordering across
// the two in both directions, so the copy is this stream's work like any
// other: it runs after this stream's earlier work, and work enqueued on this
// stream afterwards runs after it (the source is read, the destination
// written). The source lives as for a copy on one device: until this stream
// passed the copy.
#include <keel/stream.hpp>

#include "../access.hpp"
#include "../memory/shared_memory.hpp"
#include "../memory/transfer.hpp"
#include "bridge.hpp"
#include "paths.hpp"

#include <utility>

namespace keel {

namespace {

// Device -> pinned memory of that device (its own host_alloc memory, or
// ordinary memory where it has none), into `staging`.
Result<void> read_into(memory::MemoryCore& core, keel_stream stream, PinnedBuffer& staging, keel_device_addr src,
                       std::uint64_t bytes) {
    if (staging.is_pinned())
        return detail::Access::slot(staging.device()).api().memcpy_d2h(stream, staging.data(), src, bytes);
    return memory::enqueue_pageable_copy(
        core, stream, [&] { return core.ops().pageable_d2h(stream, staging.data(), src, bytes); });
}

// Host memory (of another plugin, perhaps) -> device: pageable to it.
Result<void> write_from(memory::MemoryCore& core, keel_stream stream, keel_device_addr dst, const PinnedBuffer& staging,
                        std::uint64_t bytes) {
    return memory::enqueue_pageable_copy(
        core, stream, [&] { return core.ops().pageable_h2d(stream, dst, staging.data(), bytes); });
}

}  // namespace

Result<void> Stream::copy_across(DeviceView dst, DeviceView src) const {
    const detail::DeviceSlot& mine = detail::Access::slot(device_);
    const detail::DeviceSlot& to = *detail::Access::slot(dst);
    const detail::DeviceSlot& from = *detail::Access::slot(src);
    const std::uint64_t bytes = src.size();
    if (cross_device::peer_copy(from, to))
        return mine.api().memcpy_peer(handle_, to.handle, dst.address(), from.handle, src.address(), bytes);

    const bool writes_here = &to == &mine;
    const detail::DeviceSlot& other = writes_here ? from : to;
    Device other_device = detail::Access::device(other.plugin->shares().handle(other));
    KEEL_TRY_ASSIGN(const std::shared_ptr<memory::MemoryCore>* my_core, detail::Access::core(*this));
    KEEL_TRY_ASSIGN(std::shared_ptr<memory::MemoryCore> other_core, memory::shared_core(other_device, nullptr));
    KEEL_TRY_ASSIGN(PinnedBuffer staging, PinnedBuffer::allocate(writes_here ? other_device : device_, bytes));
    cross_device::HelperStreams& helpers = *other.helpers;
    KEEL_TRY_ASSIGN(keel_stream helper, helpers.acquire(other.api(), other.handle));

    Result<void> r = ok();
    auto then = [&r](auto&& step) {
        if (r.ok()) r = step();
    };
    if (writes_here) {
        // The helper reads the source once this stream's earlier work ran;
        // this stream writes the destination once the helper has read.
        then([&] { return cross_device::order_after(other, helper, mine, handle_, *my_core); });
        then([&] { return read_into(*other_core, helper, staging, src.address(), bytes); });
        then([&] { return cross_device::order_after(mine, handle_, other, helper, other_core); });
        then([&] { return write_from(**my_core, handle_, dst.address(), staging, bytes); });
    } else {
        // This stream reads the source; the helper writes the destination;
        // this stream's later work waits for the helper.
        then([&] { return read_into(**my_core, handle_, staging, src.address(), bytes); });
        then([&] { return cross_device::order_after(other, helper, mine, handle_, *my_core); });
        then([&] { return write_from(*other_core, helper, dst.address(), staging, bytes); });
        then([&] { return cross_device::order_after(mine, handle_, other, helper, other_core); });
    }
    const bool ordered = r.ok();
    if (!ordered) {
        // Part of it may be enqueued and not ordered before this stream's
        // later work: let it finish before the staging memory goes.
        (void)other.api().stream_synchronize(helper);
        (void)mine.api().stream_synchronize(handle_);
    }
    Result<void> given_back = helpers.enqueue_give_back(other.api(), helper);
    // The staging memory (and the other device's plugin) stay until this
    // stream passed the copy.
    Result<void> held = hold(std::move(staging), std::move(other_device), std::move(other_core));
    if (!r.ok()) return std::move(r).error().context("Stream::copy from " + from.name + " to " + to.name);
    KEEL_TRY(std::move(given_back));
    return held;
}

}  // namespace keel
