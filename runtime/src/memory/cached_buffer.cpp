#include <keel/memory/cached_buffer.hpp>

namespace keel::memory {

Result<CachedBuffer> CachedBuffer::allocate(MemoryCore& core, keel_stream stream,
                                            std::uint64_t size) {
    KEEL_TRY_ASSIGN(Block * block, core.allocator().allocate(stream, size));
    CachedBuffer buffer;
    buffer.core_ = &core;
    buffer.block_ = block;
    buffer.size_ = size;
    return buffer;
}

Result<void> CachedBuffer::record_stream(keel_stream stream) {
    if (block_ == nullptr)
        return Error(KEEL_STATUS_FAILED_PRECONDITION, "[CachedBuffer::record_stream] buffer is empty");
    return core_->allocator().record_use(block_, stream, uses_);
}

void CachedBuffer::reset() noexcept {
    if (block_ == nullptr) return;
    core_->allocator().free(block_, std::move(uses_));
    uses_ = {};
    block_ = nullptr;
    core_ = nullptr;
    size_ = 0;
}

}  // namespace keel::memory
