// Device memory (cudaMalloc) and pinned host memory (cudaHostAlloc).
#include "cuda_error.hpp"
#include "entries.hpp"
#include "handles.hpp"
#include "ipc.hpp"

#include <keel/plugin/boundary.hpp>

#include <cstdint>

namespace keel::cuda::api {

keel_error* device_alloc(keel_device device, uint64_t size, keel_device_addr* out_addr) noexcept {
    return plugin::entry("cuda device_alloc", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(Device * d, device_from(device));
        KEEL_TRY(plugin::require_non_null(out_addr, "out_addr"));
        if (size == 0) return Error(KEEL_STATUS_INVALID_ARGUMENT, "size is 0");
        // Decided here, not by cudaMalloc, whose answer to absurd sizes
        // (2^64 - 1) is not documented as cudaErrorMemoryAllocation.
        if (size > d->properties().max_allocation)
            return Error(KEEL_STATUS_OUT_OF_MEMORY, std::to_string(size) + " bytes do not fit " + d->label() +
                                                        ", which has " +
                                                        std::to_string(d->properties().total_memory) + " bytes");
        KEEL_TRY(d->make_current());
        void* ptr = nullptr;
        KEEL_TRY(check_cuda(cudaMalloc(&ptr, size),
                            std::to_string(size) + " bytes on " + d->label() + " (" +
                                std::to_string(d->properties().total_memory) + " in total)"));
        // keel_device_addr is the CUdeviceptr value.
        const auto addr = static_cast<keel_device_addr>(reinterpret_cast<std::uintptr_t>(ptr));
        d->allocations().add(addr, size);
        *out_addr = addr;
        return ok();
    });
}

keel_error* device_free(keel_device device, keel_device_addr addr) noexcept {
    return plugin::entry("cuda device_free", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(Device * d, device_from(device));
        KEEL_TRY(refuse_imported(*d, addr));
        KEEL_TRY(d->allocations().remove(addr));
        KEEL_TRY(d->make_current());
        // cudaFree waits for the whole device; the runtime's caching
        // allocator is what keeps it off hot paths.
        return check_cuda(cudaFree(reinterpret_cast<void*>(static_cast<std::uintptr_t>(addr))));
    });
}

keel_error* host_alloc(keel_device device, uint64_t size, void** out_ptr) noexcept {
    return plugin::entry("cuda host_alloc", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(Device * d, device_from(device));
        KEEL_TRY(plugin::require_non_null(out_ptr, "out_ptr"));
        if (size == 0) return Error(KEEL_STATUS_INVALID_ARGUMENT, "size is 0");
        // Made current so the allocation does not create a context on
        // another GPU; portable so every device's streams copy at full speed.
        KEEL_TRY(d->make_current());
        void* ptr = nullptr;
        KEEL_TRY(check_cuda(cudaHostAlloc(&ptr, size, cudaHostAllocPortable),
                            std::to_string(size) + " pinned bytes"));
        d->pinned().add(reinterpret_cast<std::uintptr_t>(ptr), size);
        *out_ptr = ptr;
        return ok();
    });
}

keel_error* host_free(keel_device device, void* ptr) noexcept {
    return plugin::entry("cuda host_free", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(Device * d, device_from(device));
        KEEL_TRY(plugin::require_non_null(ptr, "ptr"));
        KEEL_TRY(d->pinned().remove(reinterpret_cast<std::uintptr_t>(ptr)));
        KEEL_TRY(d->make_current());
        return check_cuda(cudaFreeHost(ptr));
    });
}

}  // namespace keel::cuda::api
