#include "host_buffers.hpp"

#include "ze_error.hpp"

#include <bit>
#include <string>

namespace keel::level_zero {

namespace {
constexpr std::size_t kClasses = 15;  // 256 B << 0 .. 256 B << 14 = 4 MiB
static_assert((HostBufferPool::kSmallest << (kClasses - 1)) == HostBufferPool::kLargest);

std::size_t class_of(std::size_t bytes) {
    const std::size_t rounded = std::bit_ceil(bytes < HostBufferPool::kSmallest ? HostBufferPool::kSmallest : bytes);
    return static_cast<std::size_t>(std::countr_zero(rounded) - std::countr_zero(HostBufferPool::kSmallest));
}
}  // namespace

struct HostBufferPool::Core {
    ze_context_handle_t context;
    std::mutex mutex;
    std::array<std::vector<std::unique_ptr<HostBuffer>>, kClasses> idle;  // guarded by mutex
    std::size_t idle_bytes = 0;                                            // guarded by mutex
    bool closed = false;                                                   // guarded by mutex

    void give_back(std::unique_ptr<HostBuffer> buffer) noexcept;
    void free(std::unique_ptr<HostBuffer> buffer) noexcept { (void)ze().zeMemFree(context, buffer->data); }
};

void HostBufferPool::Core::give_back(std::unique_ptr<HostBuffer> buffer) noexcept {
    try {
        std::lock_guard lock(mutex);
        if (!closed && idle_bytes + buffer->size <= kIdleCapacity) {
            idle_bytes += buffer->size;
            idle[class_of(buffer->size)].push_back(std::move(buffer));
            return;
        }
    } catch (...) {
        // Out of host memory: free it instead.
    }
    free(std::move(buffer));
}

HostBufferPool::HostBufferPool(ze_context_handle_t context) : core_(std::make_shared<Core>()) {
    core_->context = context;
}

Result<HostBufferRef> HostBufferPool::lend(std::size_t bytes) {
    if (bytes > kLargest)
        return Error(KEEL_STATUS_INTERNAL, "host buffer of " + std::to_string(bytes) + " bytes asked for");
    const std::size_t cls = class_of(bytes);
    std::unique_ptr<HostBuffer> buffer;
    {
        std::lock_guard lock(core_->mutex);
        if (core_->closed) return Error(KEEL_STATUS_INTERNAL, "host buffer pool used after plugin_shutdown");
        if (!core_->idle[cls].empty()) {
            buffer = std::move(core_->idle[cls].back());
            core_->idle[cls].pop_back();
            core_->idle_bytes -= buffer->size;
        }
    }
    if (!buffer) {
        auto fresh = std::make_unique<HostBuffer>();
        fresh->size = kSmallest << cls;
        ze_host_mem_alloc_desc_t desc{ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC, nullptr, 0};
        KEEL_TRY(KEEL_ZE(zeMemAllocHost, core_->context, &desc, fresh->size, 64, &fresh->data)
                     .check(std::to_string(fresh->size) + " bytes of staging memory"));
        buffer = std::move(fresh);
    }
    // The deleter gives the buffer back, also when making the shared_ptr
    // itself throws (std::shared_ptr calls it then).
    std::shared_ptr<Core> core = core_;
    return HostBufferRef(buffer.release(), [core](const HostBuffer* b) {
        core->give_back(std::unique_ptr<HostBuffer>(const_cast<HostBuffer*>(b)));
    });
}

void HostBufferPool::release_all() noexcept {
    std::array<std::vector<std::unique_ptr<HostBuffer>>, kClasses> idle;
    {
        std::lock_guard lock(core_->mutex);
        core_->closed = true;
        idle.swap(core_->idle);
        core_->idle_bytes = 0;
    }
    for (auto& list : idle)
        for (auto& b : list) core_->free(std::move(b));
}

}  // namespace keel::level_zero
