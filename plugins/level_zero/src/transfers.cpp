#include "transfers.hpp"

#include "usm.hpp"

#include <memory>
#include <string>

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

namespace {

class ZePinnedMemory final : public staging::PinnedMemory {
public:
    explicit ZePinnedMemory(ze_context_handle_t context) noexcept : context_(context) {}
    Result<void*> allocate(std::size_t bytes) override {
        void* block = nullptr;
        ze_host_mem_alloc_desc_t desc{ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC, nullptr, 0};
        KEEL_TRY(KEEL_ZE(zeMemAllocHost, context_, &desc, bytes, 64, &block).check("staging memory"));
        return block;
    }
    void free(void* block) noexcept override { (void)ze().zeMemFree(context_, block); }

private:
    ze_context_handle_t context_;
};

// One pageable copy's view of a stream: host steps on its host worker,
// device copies on its command list, in the stream's order.
class ZeStagingStream final : public staging::StagingStream {
public:
    ZeStagingStream(Stream& stream, keel_device_addr device, bool to_device) noexcept
        : stream_(stream), device_(device), to_device_(to_device) {}

    Result<void> enqueue_host_step(Step step) override {
        return stream_.enqueue_host([step = std::move(step)](Status status) -> Result<void> {
            step(status == KEEL_STATUS_OK);
            return ok();
        });
    }
    Result<void> enqueue_device_copy(std::uint64_t offset, void* block, std::size_t bytes) override {
        void* device = device_pointer(device_ + offset);
        if (to_device_) return enqueue_copy(stream_, device, block, bytes);
        return enqueue_copy(stream_, block, device, bytes);
    }

private:
    Stream& stream_;
    keel_device_addr device_;
    bool to_device_;
};


}  // namespace

std::unique_ptr<staging::PinnedMemory> ze_pinned_memory(ze_context_handle_t context) {
    return std::make_unique<ZePinnedMemory>(context);
}

Result<void> enqueue_staged_h2d(Stream& stream, keel_device_addr dst, const void* src, std::uint64_t size) {
    ZeStagingStream port(stream, dst, true);
    staging::PageableStaging& staging = stream.device().pageable_staging();
    return staging.to_device(port, src, size);
}

Result<void> enqueue_staged_d2h(Stream& stream, void* dst, keel_device_addr src, std::uint64_t size) {
    ZeStagingStream port(stream, src, false);
    staging::PageableStaging& staging = stream.device().pageable_staging();
    return staging.to_host(port, dst, size);
}

}  // namespace keel::level_zero
