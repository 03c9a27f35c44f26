#include "stream_copy.hpp"

#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace keel::cpu {
namespace {
// Below this the destination likely stays in cache for its next reader.
constexpr std::size_t kStreamingMin = 256 * 1024;
}  // namespace

void copy_streaming(std::byte* dst, const std::byte* src, std::size_t size) noexcept {
#if defined(__SSE2__)
    if (size < kStreamingMin) {
        std::memcpy(dst, src, size);
        return;
    }
    // Align the destination to a cache line; the source may stay unaligned.
    const std::size_t head = (64 - (reinterpret_cast<std::uintptr_t>(dst) & 63)) & 63;
    std::memcpy(dst, src, head);
    dst += head;
    src += head;
    size -= head;
    const std::size_t body = size & ~std::size_t{63};
    for (std::size_t i = 0; i < body; i += 64) {
        const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
        const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i + 16));
        const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i + 32));
        const __m128i d = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i + 48));
        _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i), a);
        _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i + 16), b);
        _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i + 32), c);
        _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i + 48), d);
    }
    // Streaming stores are weakly ordered: make them visible before the op
    // completes (and before anyone observes its event).
    _mm_sfence();
    std::memcpy(dst + body, src + body, size - body);
#else
    std::memcpy(dst, src, size);
#endif
}

}  // namespace keel::cpu
