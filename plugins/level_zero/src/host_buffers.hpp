// Host memory the device can reach (zeMemAllocHost), lent to operations for
// as long as they are in flight: the bytes of memcpy_h2d_inline, fill
// patterns. (Copies of pageable memory stage through keel::staging, see
// transfers.hpp.) Sizes are
// powers of two from 256 B to 4 MiB; idle buffers are kept for reuse up to
// 64 MiB per device, beyond which a returned buffer is freed.
#pragma once

#include <keel/result.hpp>

#include <level_zero/ze_api.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

namespace keel::level_zero {

struct HostBuffer {
    void* data = nullptr;
    std::size_t size = 0;
};

// Shared by the operations that use it; the last owner gives it back.
using HostBufferRef = std::shared_ptr<const HostBuffer>;

// Thread-safe.
class HostBufferPool {
public:
    static constexpr std::size_t kSmallest = 256;
    static constexpr std::size_t kLargest = 4u << 20;
    static constexpr std::size_t kIdleCapacity = 64u << 20;

    explicit HostBufferPool(ze_context_handle_t context);
    HostBufferPool(const HostBufferPool&) = delete;
    HostBufferPool& operator=(const HostBufferPool&) = delete;
    HostBufferPool(HostBufferPool&&) = delete;
    HostBufferPool& operator=(HostBufferPool&&) = delete;
    ~HostBufferPool() = default;  // release_all() first: no Level Zero call here

    // A buffer of at least `bytes` (<= kLargest) bytes.
    [[nodiscard]] Result<HostBufferRef> lend(std::size_t bytes);

    // Frees every idle buffer and stops reuse (plugin_shutdown).
    void release_all() noexcept;

private:
    struct Core;
    std::shared_ptr<Core> core_;  // shared with the buffers' deleters
};

}  // namespace keel::level_zero
