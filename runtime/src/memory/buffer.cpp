#include "memory/buffer.hpp"

#include <keel/stream.hpp>

#include "access.hpp"
#include "plugin.hpp"
#include "trace/history.hpp"
#include "trace/hooks.hpp"

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
    if (mine != nullptr && mine != &detail::Access::slot(stream.device()))
        return Error(KEEL_STATUS_INVALID_ARGUMENT, "[Buffer::record_stream] the stream is on " +
                                                       stream.device().name() + ", the buffer on " +
                                                       mine->name);
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
