// The plugin's SPIR-V modules built for one device, each on first use
// (zeModuleCreate compiles SPIR-V to the GPU's ISA: tens to hundreds of ms).
#pragma once

#include <keel/result.hpp>

#include <level_zero/ze_api.h>

#include <array>
#include <mutex>

namespace keel::level_zero {

struct DeviceLimits;

enum class SpirvModule { core = 0, fp64 = 1 };

// Thread-safe; a module is built once, under a mutex (concurrent first
// users wait for the one build). A failed build is not remembered: the next
// use tries again.
class ModuleCache {
public:
    ModuleCache(ze_context_handle_t context, ze_device_handle_t device, const DeviceLimits& limits) noexcept;
    ModuleCache(const ModuleCache&) = delete;
    ModuleCache& operator=(const ModuleCache&) = delete;
    ModuleCache(ModuleCache&&) = delete;
    ModuleCache& operator=(ModuleCache&&) = delete;
    ~ModuleCache() = default;  // release_all() first: no Level Zero call here

    // The module, built now if needed. Errors carry the driver's build log.
    [[nodiscard]] Result<ze_module_handle_t> get(SpirvModule which);

    // Destroys every module (plugin_shutdown, after every stream, hence
    // every kernel object, was destroyed).
    void release_all() noexcept;

private:
    const ze_context_handle_t context_;
    const ze_device_handle_t device_;
    const bool fp64_;
    std::mutex mutex_;
    std::array<ze_module_handle_t, 2> modules_{};  // guarded by mutex_
};

}  // namespace keel::level_zero
