#include "memory/buffer.hpp"

#include <keel/stream.hpp>

#include "access.hpp"
#include "cross_device/bridge.hpp"
#include "logging.hpp"
#include "memory/shared_memory.hpp"
#include "memory/stream_registry.hpp"
#include "plugin.hpp"
#include "trace/history.hpp"
#include "trace/hooks.hpp"

#include <algorithm>

#include <utility>

namespace keel {

namespace memory {

Result<Buffer> allocate(const std::shared_ptr<MemoryCore>& core, keel_stream stream, std::uint64_t size,
                        std::source_location where) {
    KEEL_TRY_ASSIGN(Block * block, core->allocator().allocate(stream, size));
    if (trace::on()) [[unlikely]]
        trace::allocation(*core, stream, BlockAllocator::size(block), BlockAllocator::address(block));
    if (trace::history_on()) [[unlikely]]
        trace::remember_allocation(&core->allocator(), BlockAllocator::address(block), where);
    Buffer buffer;
    detail::Access::memory(buffer) = core.get();  // the block keeps it
    detail::Access::block(buffer) = block;
    detail::Access::view(buffer) =
        detail::Access::view(core->device(), BlockAllocator::address(block), size);
    return buffer;
}

Result<void> record_use(Buffer& buffer, keel_stream stream, std::optional<StreamGeneration> generation) {
    if (buffer.empty())
        return Error(KEEL_STATUS_INVALID_ARGUMENT,
                     "[Buffer::record_stream] the buffer is empty (moved-from or freed)");
    return detail::Access::memory(buffer)->allocator().record_use(detail::Access::block(buffer), stream,
                                                                 detail::Access::uses(buffer), generation);
}

Result<void> record_foreign_use(Buffer& buffer, const Stream& stream) {
    if (buffer.empty())
        return Error(KEEL_STATUS_INVALID_ARGUMENT,
                     "[Buffer::record_stream] the buffer is empty (moved-from or freed)");
    const keel_stream handle = detail::Access::handle(stream);
    std::vector<RecordedUse>& uses = detail::Access::uses(buffer);
    for (RecordedUse& use : uses) {
        if (use.stream != handle) continue;
        use.generation = detail::Access::generation(stream);  // the handle may name a newer stream now
        use.foreign = &detail::Access::slot(stream.device());
        return ok();
    }
    try {
        uses.push_back(RecordedUse{handle, detail::Access::generation(stream), nullptr, 0,
                                   &detail::Access::slot(stream.device())});
    } catch (...) {
        return Error(KEEL_STATUS_OUT_OF_MEMORY, "[Buffer::record_stream] host allocation failed");
    }
    // The other device's memory instance orders the free (a native wait
    // records a fence there): bound now, not inside the free.
    auto core = detail::Access::core(stream);
    if (!core.ok()) return std::move(core).error().context("Buffer::record_stream");
    return ok();
}

void order_foreign_uses(MemoryCore& core, const Block* block, std::vector<RecordedUse>& uses) noexcept {
    if (std::none_of(uses.begin(), uses.end(), [](const RecordedUse& u) { return u.foreign != nullptr; })) return;
    // No plugin call is allowed in a host function: the allocator keeps the
    // block out of the cache instead (BlockAllocator::free logs it).
    if (detail::in_host_func()) return;
    const keel_stream owner = BlockAllocator::stream(block);
    const detail::DeviceSlot& owner_device = *core.device();
    for (const RecordedUse& use : uses) {
        if (use.foreign == nullptr) continue;
        // The other device's memory instance before any stream is kept open:
        // shared_core's lock comes first in the lock order (a memory instance
        // is made under it, and making one takes the allocator's and then
        // the stream registry's locks, which keep_open holds).
        auto theirs = owner != nullptr
                          ? shared_core(detail::Access::device(use.foreign->plugin->shares().handle(*use.foreign)), nullptr)
                          : Result<std::shared_ptr<MemoryCore>>(
                                Error(KEEL_STATUS_FAILED_PRECONDITION, "the buffer's own stream is closed"));
        // A stream closed since: closing waited for its work.
        const OpenStream foreign = keep_open(use.stream, use.generation, Match::exact);
        if (!foreign) continue;
        Result<void> ordered = Error(KEEL_STATUS_FAILED_PRECONDITION, "the buffer's own stream is closed");
        if (const StreamGeneration g = owner != nullptr ? stream_generation(owner) : 0; g != 0) {
            const OpenStream open_owner = keep_open(owner, g, Match::exact);
            // The block is reused only by its own stream's later work, so
            // that stream waits for the other device's use: the free stays
            // stream-ordered.
            if (!open_owner)
                ordered = Error(KEEL_STATUS_FAILED_PRECONDITION, "the buffer's own stream is closed");
            else
                ordered = theirs.ok() ? cross_device::order_after(owner_device, owner, *use.foreign, use.stream, *theirs)
                                      : Result<void>(std::move(theirs).error());
        }
        if (!ordered.ok()) {
            // No stream to order: the use is waited for here.
            detail::log_debug("[Buffer] freed after a use on " + use.foreign->name + ": " + ordered.error().message() +
                              "; waiting for that stream");
            (void)use.foreign->api().stream_synchronize(use.stream);
        }
    }
    std::erase_if(uses, [](const RecordedUse& u) { return u.foreign != nullptr; });
}

}  // namespace memory

Result<Buffer> Buffer::allocate(const Stream& stream, std::uint64_t size, std::source_location where) {
    if (stream.empty())
        return Error(KEEL_STATUS_INVALID_ARGUMENT,
                     "[Buffer::allocate] the stream is empty (moved-from or closed)");
    KEEL_TRY_ASSIGN(const std::shared_ptr<memory::MemoryCore>* core, detail::Access::core(stream));
    Result<Buffer> buffer = memory::allocate(*core, detail::Access::handle(stream), size, where);
    if (!buffer.ok()) buffer = std::move(buffer).error().context("Buffer::allocate on " + stream.device().name());
    return buffer;
}

Buffer::Buffer() noexcept = default;

Buffer::Buffer(Buffer&& other) noexcept
    : memory_(std::exchange(other.memory_, nullptr)),
      block_(std::exchange(other.block_, nullptr)),
      view_(std::exchange(other.view_, DeviceView())),
      uses_(std::move(other.uses_)) {
    other.uses_.clear();
}

Buffer& Buffer::operator=(Buffer&& other) noexcept {
    if (this != &other) {
        reset();
        memory_ = std::exchange(other.memory_, nullptr);
        block_ = std::exchange(other.block_, nullptr);
        view_ = std::exchange(other.view_, DeviceView());
        uses_ = std::move(other.uses_);
        other.uses_.clear();
    }
    return *this;
}

Buffer::~Buffer() { reset(); }

std::uint64_t Buffer::capacity() const noexcept {
    return block_ == nullptr ? 0 : memory::BlockAllocator::size(block_);
}

Result<DeviceView> Buffer::view(std::uint64_t offset, std::uint64_t size) const {
    if (empty())
        return Error(KEEL_STATUS_INVALID_ARGUMENT, "[Buffer::view] the buffer is empty (moved-from or freed)");
    return view_.sub(offset, size);
}

Result<void> Buffer::record_stream(const Stream& stream) {
    if (stream.empty())
        return Error(KEEL_STATUS_INVALID_ARGUMENT,
                     "[Buffer::record_stream] the stream is empty (moved-from or closed)");
    const detail::DeviceSlot* mine = detail::Access::slot(view_);
    const detail::DeviceSlot* theirs = &detail::Access::slot(stream.device());
    if (mine != nullptr && mine != theirs) return memory::record_foreign_use(*this, stream);
    // The stream's own generation: no lookup in the process-wide registry,
    // whose shared lock every thread would write.
    KEEL_TRY(memory::record_use(*this, detail::Access::handle(stream), detail::Access::generation(stream)));
    if (trace::on()) [[unlikely]] trace::record_stream(detail::Access::handle(stream), view_.size(), view_.address());
    return ok();
}

void Buffer::reset() noexcept {
    if (block_ == nullptr) return;
    // The free gives back the block's share of the core last (it may run
    // deferred releases that drop every other reference first).
    std::vector<memory::RecordedUse> uses = std::move(uses_);
    uses_.clear();
    memory::order_foreign_uses(*memory_, block_, uses);
    view_ = DeviceView();
    memory::Block* block = std::exchange(block_, nullptr);
    if (trace::on()) [[unlikely]]
        trace::deallocation(*memory_, memory::BlockAllocator::stream(block), memory::BlockAllocator::size(block),
                            memory::BlockAllocator::address(block), !uses.empty());
    if (trace::history_kept()) [[unlikely]]
        trace::forget_allocation(&memory_->allocator(), memory::BlockAllocator::address(block));
    std::exchange(memory_, nullptr)->allocator().free(block, std::move(uses));
}

}  // namespace keel
