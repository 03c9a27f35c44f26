#include "device.hpp"

#include "cuda_error.hpp"
#include "kernel_preload.hpp"
#include "pageable_copy.hpp"

#include <keel/plugin/host_log.hpp>

#include <algorithm>
#include <cstring>

namespace keel::cuda {

namespace {

// Enough for the streams and events a busy program keeps cycling through;
// beyond that, handles are destroyed instead of pooled.
constexpr std::size_t kPoolCapacity = 64;

// cudaMalloc returns memory aligned to at least 256 bytes (CUDA C
// Programming Guide, "Device Memory Accesses").
constexpr std::uint64_t kCudaMallocAlignment = 256;

void copy_text(char* out, std::size_t capacity, const char* text) {
    std::size_t n = std::min(std::strlen(text), capacity - 1);
    std::memcpy(out, text, n);
    out[n] = '\0';
}

std::string version_text(int version) {
    if (version <= 0) return "none";
    return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

// Why there is no device, in words that say what to fix.
std::string unavailable_reason(cudaError_t error) {
    int driver = 0;
    int runtime = 0;
    (void)cudaDriverGetVersion(&driver);  // 0 when no driver is installed
    (void)cudaRuntimeGetVersion(&runtime);
    const std::string cuda_says = describe_cuda(error);
    switch (error) {
        case cudaErrorInsufficientDriver:
            if (driver == 0)
                return "no CUDA driver: " + cuda_says + " (libcuda.so.1 not found; the plugin's CUDA runtime is " +
                       version_text(runtime) + ")";
            return "CUDA driver too old: " + cuda_says + " (driver supports CUDA " +
                   version_text(driver) + ", the plugin's runtime is " + version_text(runtime) + ")";
        case cudaErrorNoDevice:
            return "no CUDA device: " + cuda_says;
        default:
            return "CUDA unavailable: " + cuda_says;
    }
}

}  // namespace

namespace {
// Whether a keel call on this thread has made a device current already.
thread_local bool t_has_context = false;
}  // namespace

Result<void> make_current(int ordinal) {
    int current = -1;
    if (cudaGetDevice(&current) == cudaSuccess && current == ordinal) {
        t_has_context = true;
        return ok();
    }
    // No context added: a sticky error must read exactly as CUDA reports it.
    KEEL_TRY(check_cuda(cudaSetDevice(ordinal)));
    t_has_context = true;
    return ok();
}

Result<void> ensure_context(int ordinal) {
    if (t_has_context) return ok();
    return make_current(ordinal);
}

Result<void> Device::make_current() const {
    KEEL_TRY(cuda::make_current(ordinal_));
    std::call_once(kernels_loaded_, load_registered_kernels);
    return ok();
}

Result<void> Device::ensure_context() const {
    if (t_has_context) return ok();
    return make_current();
}

Device::Device(std::uint32_t index, int ordinal, const cudaDeviceProp& prop,
               const StagingConfig& staging_config)
    : index_(index),
      ordinal_(ordinal),
      label_("cuda:" + std::to_string(index)),
      allocations_("device allocation of " + label_),
      pinned_("pinned host allocation of " + label_),
      pageable_staging_(cuda_pinned_memory(), staging_config),
      idle_streams_(kPoolCapacity),
      idle_events_(kPoolCapacity),
      idle_timing_events_(kPoolCapacity) {
    properties_.struct_size = KEEL_DEVICE_PROPERTIES_STRUCT_SIZE;
    copy_text(properties_.name, sizeof properties_.name, prop.name);
    copy_text(properties_.vendor, sizeof properties_.vendor, "NVIDIA");
    properties_.total_memory = prop.totalGlobalMem;
    // Not HOST_ADDRESSABLE: cudaMalloc memory faults when the host
    // dereferences it (only managed memory, which keel does not allocate,
    // is host-accessible).
    // PEER_COPY: memcpy_peer (peer.cpp). Waits across devices are bridged by
    // the runtime: this plugin's error propagation is per device.
    properties_.capabilities = KEEL_DEVICE_CAP_EVENT_TIMING | KEEL_DEVICE_CAP_PINNED_MEMORY | KEEL_DEVICE_CAP_PEER_COPY;
    // cudaIpc* needs a device that supports it (not WSL, not some MIG setups).
    int ipc_ok = 0;
    if (cudaDeviceGetAttribute(&ipc_ok, cudaDevAttrIpcEventSupport, ordinal_) == cudaSuccess && ipc_ok != 0)
        properties_.capabilities |= KEEL_DEVICE_CAP_IPC_MEMORY | KEEL_DEVICE_CAP_IPC_EVENTS;
    (void)cudaGetLastError();
    if (prop.concurrentKernels != 0) properties_.capabilities |= KEEL_DEVICE_CAP_CONCURRENT_STREAMS;
    properties_.compute_units = static_cast<std::uint32_t>(prop.multiProcessorCount);
    properties_.max_allocation = prop.totalGlobalMem;
    properties_.alloc_alignment = kCudaMallocAlignment;
}

void Device::release_all() noexcept try {
    const std::vector<cudaStream_t> streams = idle_streams_.take_all();
    std::vector<cudaEvent_t> events = idle_events_.take_all();
    for (cudaEvent_t e : idle_timing_events_.take_all()) events.push_back(e);
    const auto leaked = allocations_.take_all();
    const auto leaked_pinned = pinned_.take_all();
    // A device never used has nothing to release: do not create its context now.
    if ((streams.empty() && events.empty() && leaked.empty() && leaked_pinned.empty() &&
         pageable_staging_.stats().blocks.held_bytes == 0) ||
        !cuda::make_current(ordinal_).ok())
        return;
    pageable_staging_.release_all();
    for (cudaStream_t s : streams) (void)cudaStreamDestroy(s);
    for (cudaEvent_t e : events) (void)cudaEventDestroy(e);
    if (!leaked.empty())
        plugin::HostLog::write(KEEL_LOG_WARN, "[cuda plugin_shutdown] freeing " +
                                                  std::to_string(leaked.size()) +
                                                  " device allocation(s) still live on " + label_);
    for (const auto& [addr, size] : leaked) {
        (void)size;
        (void)cudaFree(reinterpret_cast<void*>(addr));
    }
    for (const auto& [addr, size] : leaked_pinned) {
        (void)size;
        (void)cudaFreeHost(reinterpret_cast<void*>(addr));
    }
} catch (...) {
    // Out of host memory at shutdown: leave the rest to process exit.
}

Discovery discover_devices() {
    Discovery found;
    int count = 0;
    cudaError_t error = cudaGetDeviceCount(&count);
    if (error != cudaSuccess) {
        found.status = unavailable_reason(error);
        return found;
    }
    if (count == 0) {
        found.status = "no CUDA device: cudaGetDeviceCount found none";
        return found;
    }
    // A staging setting that does not parse leaves no device, saying why.
    const Result<StagingConfig> staging_config = staging::with_environment(StagingConfig{});
    if (!staging_config.ok()) {
        found.status = staging_config.error().message();
        return found;
    }
    for (int ordinal = 0; ordinal < count; ++ordinal) {
        cudaDeviceProp prop{};
        error = cudaGetDeviceProperties(&prop, ordinal);
        if (error != cudaSuccess) {
            // Keep the others usable; say which one is missing and why.
            if (!found.status.empty()) found.status += "; ";
            found.status += "CUDA device " + std::to_string(ordinal) + " skipped: " + describe_cuda(error);
            continue;
        }
        const auto index = static_cast<std::uint32_t>(found.devices.size());
        found.devices.push_back(std::make_unique<Device>(index, ordinal, prop, *staging_config));
    }
    return found;
}

}  // namespace keel::cuda
