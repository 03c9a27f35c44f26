#include "transfers.hpp"

#include "usm.hpp"

#include <algorithm>
#include <cstring>

namespace keel::level_zero {

Result<void> enqueue_copy(Stream& stream, void* dst, const void* src, std::uint64_t size, Keep keep) {
    KEEL_TRY(stream.enqueue(
        [&](ze_command_list_handle_t list, const EventSlot& signal, uint32_t count, ze_event_handle_t* waits) {
            return KEEL_ZE(zeCommandListAppendMemoryCopy, list, dst, src, size, signal.event, count, waits);
        },
        {}, std::move(keep)));
    return ok();
}

Result<void> enqueue_fill(Stream& stream, void* dst, std::uint8_t value, std::uint64_t size) {
    KEEL_TRY_ASSIGN(HostBufferRef pattern, stream.device().host_buffers().lend(1));
    *static_cast<std::uint8_t*>(pattern->data) = value;
    KEEL_TRY(stream.enqueue(
        [&](ze_command_list_handle_t list, const EventSlot& signal, uint32_t count, ze_event_handle_t* waits) {
            return KEEL_ZE(zeCommandListAppendMemoryFill, list, dst, pattern->data, 1, size, signal.event, count,
                           waits);
        },
        {}, {pattern}));
    return ok();
}

Result<void> enqueue_staged_h2d(Stream& stream, keel_device_addr dst, const void* src, std::uint64_t size) {
    const std::size_t chunk = static_cast<std::size_t>(std::min<std::uint64_t>(size, HostBufferPool::kLargest));
    KEEL_TRY_ASSIGN(HostBufferRef staging, stream.device().host_buffers().lend(chunk));
    const auto* from = static_cast<const unsigned char*>(src);
    for (std::uint64_t done = 0; done < size; done += chunk) {
        const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(chunk, size - done));
        void* buffer = staging->data;
        const unsigned char* part = from + done;
        // Read when the stream gets here, not now; skipped once the stream failed.
        KEEL_TRY(stream.enqueue_host(
            [buffer, part, n](Status status) {
                if (status == KEEL_STATUS_OK) std::memcpy(buffer, part, n);
            },
            {staging}));
        KEEL_TRY(enqueue_copy(stream, device_pointer(dst + done), buffer, n, {staging}));
    }
    return ok();
}

Result<void> enqueue_staged_d2h(Stream& stream, void* dst, keel_device_addr src, std::uint64_t size) {
    const std::size_t chunk = static_cast<std::size_t>(std::min<std::uint64_t>(size, HostBufferPool::kLargest));
    KEEL_TRY_ASSIGN(HostBufferRef staging, stream.device().host_buffers().lend(chunk));
    auto* to = static_cast<unsigned char*>(dst);
    for (std::uint64_t done = 0; done < size; done += chunk) {
        const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(chunk, size - done));
        void* buffer = staging->data;
        unsigned char* part = to + done;
        KEEL_TRY(enqueue_copy(stream, buffer, device_pointer(src + done), n, {staging}));
        // Written when the device copy completed; not at all once the stream failed.
        KEEL_TRY(stream.enqueue_host(
            [buffer, part, n](Status status) {
                if (status == KEEL_STATUS_OK) std::memcpy(part, buffer, n);
            },
            {staging}));
    }
    return ok();
}

}  // namespace keel::level_zero
