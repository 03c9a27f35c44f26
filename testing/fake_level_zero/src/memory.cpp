// Device memory (host storage behind non-canonical addresses, so the host
// faults if it dereferences one) and host memory (the host's own).
#include "api.hpp"
#include "fake.hpp"
#include "ipc_memory.hpp"

#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>

#include <sys/mman.h>
#include <unistd.h>

namespace fake_ze {

void StorageFree::operator()(std::byte* p) const noexcept {
    if (mapped != 0)
        ::munmap(p, mapped);
    else
        std::free(p);
}

namespace api {

namespace {

bool power_of_two(std::size_t v) { return v != 0 && (v & (v - 1)) == 0; }

// Large storage is mapped, and unmapped at free, as a driver's memory comes
// and goes: through malloc, freed multi-MiB blocks raise glibc's mmap
// threshold and later ones stay in its arenas, which a soak whose streams
// come and go reads as growth of the process.
constexpr std::size_t kMapFrom = 64 * 1024;

std::unique_ptr<std::byte[], Allocation::Free> allocate(std::size_t size, std::size_t alignment) {
    if (size > std::numeric_limits<std::size_t>::max() - (alignment - 1)) return {};  // rounding would wrap
    const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    if (size >= kMapFrom && alignment <= page && size <= std::numeric_limits<std::size_t>::max() - page) {
        const std::size_t length = (size + page - 1) / page * page;
        void* p = ::mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) return {};
        return {static_cast<std::byte*>(p), Allocation::Free{length}};
    }
    return {static_cast<std::byte*>(std::aligned_alloc(alignment, (size + alignment - 1) / alignment * alignment)),
            Allocation::Free{}};
}

}  // namespace

ze_result_t ZE_APICALL zeMemAllocDevice(ze_context_handle_t context, const ze_device_mem_alloc_desc_t* desc,
                                        size_t size, size_t alignment, ze_device_handle_t device_handle, void** ptr) {
    FAKE_ZE_INJECT("zeMemAllocDevice");
    if (context == nullptr || device_handle == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (desc == nullptr || ptr == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (size == 0) return ZE_RESULT_ERROR_UNSUPPORTED_SIZE;
    if (alignment != 0 && !power_of_two(alignment)) return ZE_RESULT_ERROR_UNSUPPORTED_ALIGNMENT;
    Device* device = from_handle<Device>(device_handle);
    Driver& driver = Driver::get();
    std::lock_guard lock(driver.mutex);
    if (device->lost) return ZE_RESULT_ERROR_DEVICE_LOST;
    if (size > device->memory) return ZE_RESULT_ERROR_UNSUPPORTED_SIZE;
    if (size > device->memory - device->used) return ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY;
    auto a = std::make_unique<Allocation>();
    a->size = size;
    if (asks_for_export(desc->pNext)) {
        if (!back_with_memfd(*a)) return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    } else {
        a->storage = allocate(size, 64);
    }
    if (!a->storage) return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    const std::uint64_t align = alignment > 256 ? alignment : 256;
    const std::uint64_t base = (driver.next_device_address + align - 1) & ~(align - 1);
    driver.next_device_address = base + size;
    a->context = from_handle<Context>(context);
    a->type = ZE_MEMORY_TYPE_DEVICE;
    a->device = device;
    a->base = base;
    a->size = size;
    device->used += size;
    driver.allocations.emplace(base, std::move(a));
    ++driver.live;
    *ptr = reinterpret_cast<void*>(static_cast<std::uintptr_t>(base));
    return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL zeMemAllocHost(ze_context_handle_t context, const ze_host_mem_alloc_desc_t* desc, size_t size,
                                      size_t alignment, void** ptr) {
    FAKE_ZE_INJECT("zeMemAllocHost");
    if (context == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (desc == nullptr || ptr == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (size == 0) return ZE_RESULT_ERROR_UNSUPPORTED_SIZE;
    if (alignment != 0 && !power_of_two(alignment)) return ZE_RESULT_ERROR_UNSUPPORTED_ALIGNMENT;
    const std::size_t align = alignment > 64 ? alignment : 64;
    Driver& driver = Driver::get();
    {
        std::lock_guard lock(driver.mutex);
        if (size > driver.config.host_memory - driver.host_used) return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
        driver.host_used += size;  // reserved; given back below if the allocation fails
    }
    auto a = std::make_unique<Allocation>();
    // The storage is the memory itself: host memory is host-addressable.
    a->storage = allocate(size, align);
    if (!a->storage) {
        std::lock_guard lock(driver.mutex);
        driver.host_used -= size;
        return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    }
    a->context = from_handle<Context>(context);
    a->type = ZE_MEMORY_TYPE_HOST;
    a->base = reinterpret_cast<std::uintptr_t>(a->storage.get());
    a->size = size;
    *ptr = a->storage.get();
    std::lock_guard lock(driver.mutex);
    driver.allocations.emplace(a->base, std::move(a));
    ++driver.live;
    return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL zeMemFree(ze_context_handle_t context, void* ptr) {
    FAKE_ZE_INJECT("zeMemFree");
    if (context == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (ptr == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    Driver& driver = Driver::get();
    std::unique_ptr<Allocation> freed;
    {
        std::lock_guard lock(driver.mutex);
        auto it = driver.allocations.find(reinterpret_cast<std::uintptr_t>(ptr));
        if (it == driver.allocations.end()) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
        // Opened memory is closed with zeMemCloseIpcHandle, never freed.
        if (it->second->sharing == Sharing::imported) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
        if (it->second->users != 0) violation("zeMemFree of memory a pending command still uses");
        freed = std::move(it->second);
        driver.allocations.erase(it);
        if (freed->device) freed->device->used -= freed->size;
        if (freed->type == ZE_MEMORY_TYPE_HOST) driver.host_used -= freed->size;
        --driver.live;
    }
    return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL zeMemGetAllocProperties(ze_context_handle_t context, const void* ptr,
                                               ze_memory_allocation_properties_t* props, ze_device_handle_t* device) {
    FAKE_ZE_INJECT("zeMemGetAllocProperties");
    if (context == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (ptr == nullptr || props == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    Driver& driver = Driver::get();
    std::lock_guard lock(driver.mutex);
    const Allocation* a = driver.holding(reinterpret_cast<std::uintptr_t>(ptr), 1);
    props->type = a ? a->type : ZE_MEMORY_TYPE_UNKNOWN;
    props->id = a ? a->base : 0;
    props->pageSize = a ? 4096 : 0;
    if (device != nullptr) *device = a && a->device ? to_handle<ze_device_handle_t>(a->device) : nullptr;
    return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL zeMemGetAddressRange(ze_context_handle_t context, const void* ptr, void** base, size_t* size) {
    if (context == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (ptr == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    Driver& driver = Driver::get();
    std::lock_guard lock(driver.mutex);
    const Allocation* a = driver.holding(reinterpret_cast<std::uintptr_t>(ptr), 1);
    if (a == nullptr) return ZE_RESULT_ERROR_NOT_AVAILABLE;
    if (base != nullptr) *base = reinterpret_cast<void*>(static_cast<std::uintptr_t>(a->base));
    if (size != nullptr) *size = a->size;
    return ZE_RESULT_SUCCESS;
}

}  // namespace api

}  // namespace fake_ze
