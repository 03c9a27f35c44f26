// ipc_memory_* and ipc_event_* (keel.h 1.6) over cudaIpc*: the handle is the
// 64 bytes of cudaIpcMemHandle_t / cudaIpcEventHandle_t (no descriptor).
// Every allocation is exportable (ipc_memory_alloc is device_alloc). CUDA
// refuses to open a handle in the process that made it: FAILED_PRECONDITION.
#include "ipc.hpp"

#include "cuda_error.hpp"
#include "entries.hpp"
#include "handles.hpp"

#include <keel/plugin/boundary.hpp>

#include <cstring>
#include <memory>
#include <mutex>
#include <set>
#include <utility>

namespace keel::cuda {
namespace {

std::mutex g_imported_mutex;
std::set<std::pair<const Device*, keel_device_addr>> g_imported;  // guarded by g_imported_mutex

Result<void> check_out(const keel_ipc_handle* out) {
    KEEL_TRY(plugin::require_non_null(out, "out"));
    if (out->struct_size < KEEL_IPC_HANDLE_STRUCT_SIZE)
        return Error(KEEL_STATUS_INVALID_ARGUMENT, "out->struct_size " + std::to_string(out->struct_size) +
                                                       " is smaller than keel_ipc_handle of 1.6");
    return ok();
}

template <class CudaHandle>
void write_handle(keel_ipc_handle* out, keel_ipc_handle_kind kind, std::uint64_t size, const CudaHandle& h) {
    static_assert(sizeof h <= KEEL_IPC_HANDLE_MAX_BYTES);
    out->kind = kind;
    out->fd = -1;
    out->size = size;
    out->byte_count = sizeof h;
    out->reserved = 0;
    std::memset(out->bytes, 0, sizeof out->bytes);
    std::memcpy(out->bytes, &h, sizeof h);
}

template <class CudaHandle>
Result<CudaHandle> read_handle(const keel_ipc_handle* handle, keel_ipc_handle_kind kind) {
    KEEL_TRY(plugin::require_non_null(handle, "handle"));
    if (handle->struct_size < KEEL_IPC_HANDLE_STRUCT_SIZE)
        return Error(KEEL_STATUS_INVALID_ARGUMENT, "handle->struct_size is smaller than keel_ipc_handle of 1.6");
    CudaHandle h;
    if (handle->kind != kind || handle->byte_count != sizeof h)
        return Error(KEEL_STATUS_INVALID_ARGUMENT, "not a CUDA " +
                                                       std::string(kind == KEEL_IPC_HANDLE_MEMORY ? "memory" : "event") +
                                                       " handle (kind " + std::to_string(handle->kind) + ", " +
                                                       std::to_string(handle->byte_count) + " bytes)");
    std::memcpy(&h, handle->bytes, sizeof h);
    return h;
}

// What opening a handle answers: CUDA's "invalid context" for a handle of
// this very process, an invalid handle for a forged or stale one.
Result<void> check_open(cudaError_t e, const char* what) {
    if (e == cudaErrorDeviceUninitialized) {  // "invalid device context"
        (void)cudaGetLastError();
        return Error(KEEL_STATUS_FAILED_PRECONDITION,
                     std::string(what) + ": CUDA does not open a handle in the process that exported it");
    }
    if (e == cudaErrorInvalidResourceHandle || e == cudaErrorInvalidValue || e == cudaErrorMapBufferObjectFailed) {
        (void)cudaGetLastError();
        return Error(KEEL_STATUS_INVALID_ARGUMENT, std::string(what) + ": " + cudaGetErrorString(e) +
                                                       " (a handle of another plugin, or stale)");
    }
    return check_cuda(e, what);
}

}  // namespace

Result<void> refuse_imported(const Device& device, keel_device_addr addr) {
    std::lock_guard lock(g_imported_mutex);
    if (g_imported.count({&device, addr}) != 0)
        return Error(KEEL_STATUS_INVALID_ARGUMENT,
                     hex_addr(addr) + " is imported memory: close it with ipc_memory_close");
    return ok();
}

namespace api {

keel_error* ipc_memory_alloc(keel_device device, uint64_t size, keel_device_addr* out_addr) noexcept {
    return device_alloc(device, size, out_addr);
}

keel_error* ipc_memory_export(keel_device device, keel_device_addr addr, keel_ipc_handle* out) noexcept {
    return plugin::entry("cuda ipc_memory_export", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(Device * d, device_from(device));
        KEEL_TRY(check_out(out));
        KEEL_TRY(refuse_imported(*d, addr));
        const std::optional<std::uint64_t> size = d->allocations().size_at(addr);
        if (!size)
            return Error(KEEL_STATUS_INVALID_ARGUMENT,
                         hex_addr(addr) + " is not the base of a live allocation of " + d->label());
        KEEL_TRY(d->make_current());
        cudaIpcMemHandle_t h;
        KEEL_TRY(check_cuda(cudaIpcGetMemHandle(&h, reinterpret_cast<void*>(static_cast<std::uintptr_t>(addr))),
                            "cudaIpcGetMemHandle"));
        write_handle(out, KEEL_IPC_HANDLE_MEMORY, *size, h);
        return ok();
    });
}

keel_error* ipc_memory_import(keel_device device, const keel_ipc_handle* handle,
                              keel_device_addr* out_addr) noexcept {
    return plugin::entry("cuda ipc_memory_import", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(Device * d, device_from(device));
        KEEL_TRY(plugin::require_non_null(out_addr, "out_addr"));
        KEEL_TRY_ASSIGN(cudaIpcMemHandle_t h, read_handle<cudaIpcMemHandle_t>(handle, KEEL_IPC_HANDLE_MEMORY));
        if (handle->size == 0) return Error(KEEL_STATUS_INVALID_ARGUMENT, "the handle names 0 bytes");
        KEEL_TRY(d->make_current());
        void* ptr = nullptr;
        KEEL_TRY(check_open(cudaIpcOpenMemHandle(&ptr, h, cudaIpcMemLazyEnablePeerAccess), "cudaIpcOpenMemHandle"));
        const auto addr = static_cast<keel_device_addr>(reinterpret_cast<std::uintptr_t>(ptr));
        d->allocations().add(addr, handle->size);
        {
            std::lock_guard lock(g_imported_mutex);
            g_imported.insert({d, addr});
        }
        *out_addr = addr;
        return ok();
    });
}

keel_error* ipc_memory_close(keel_device device, keel_device_addr addr) noexcept {
    return plugin::entry("cuda ipc_memory_close", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(Device * d, device_from(device));
        {
            std::lock_guard lock(g_imported_mutex);
            if (g_imported.erase({d, addr}) == 0)
                return Error(KEEL_STATUS_INVALID_ARGUMENT, hex_addr(addr) + " is not an address from ipc_memory_import");
        }
        KEEL_TRY(d->allocations().remove(addr));
        KEEL_TRY(d->make_current());
        return check_cuda(cudaIpcCloseMemHandle(reinterpret_cast<void*>(static_cast<std::uintptr_t>(addr))),
                          "cudaIpcCloseMemHandle");
    });
}

keel_error* ipc_event_export(keel_event event, keel_ipc_handle* out) noexcept {
    return plugin::entry("cuda ipc_event_export", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(Event * e, event_from(event));
        KEEL_TRY(check_out(out));
        if (e->sharing() != Event::Sharing::exported)
            return Error(KEEL_STATUS_INVALID_ARGUMENT, "the event was not created with KEEL_EVENT_INTERPROCESS");
        KEEL_TRY(e->device().make_current());
        cudaIpcEventHandle_t h;
        KEEL_TRY(check_cuda(cudaIpcGetEventHandle(&h, e->cuda()), "cudaIpcGetEventHandle"));
        write_handle(out, KEEL_IPC_HANDLE_EVENT, 0, h);
        return ok();
    });
}

keel_error* ipc_event_import(keel_device device, const keel_ipc_handle* handle, keel_event* out_event) noexcept {
    return plugin::entry("cuda ipc_event_import", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(Device * d, device_from(device));
        KEEL_TRY(plugin::require_non_null(out_event, "out_event"));
        KEEL_TRY_ASSIGN(cudaIpcEventHandle_t h, read_handle<cudaIpcEventHandle_t>(handle, KEEL_IPC_HANDLE_EVENT));
        KEEL_TRY(d->make_current());
        cudaEvent_t raw = nullptr;
        KEEL_TRY(check_open(cudaIpcOpenEventHandle(&raw, h), "cudaIpcOpenEventHandle"));
        auto e = std::make_unique<Event>(*d, raw, false, Event::Sharing::imported);
        e->mark_recorded();
        *out_event = to_handle(e.release());
        return ok();
    });
}

}  // namespace api
}  // namespace keel::cuda
