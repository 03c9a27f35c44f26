#include "modules.hpp"

#include "device.hpp"
#include "spirv_modules.hpp"
#include "ze_error.hpp"

#include <keel/plugin/bounded_text.hpp>

#include <string>
#include <vector>

namespace keel::level_zero {

namespace {

constexpr std::size_t kMaxLogInMessage = 4000;

const char* module_name(SpirvModule which) { return which == SpirvModule::core ? "core" : "fp64"; }

// The build log's text, and the log released; "" when there is none.
std::string take_build_log(ze_module_build_log_handle_t log) {
    if (log == nullptr) return {};
    std::string text;
    std::size_t size = 0;
    if (ze().zeModuleBuildLogGetString(log, &size, nullptr) == ZE_RESULT_SUCCESS && size > 1) {
        std::vector<char> buffer(size);
        if (ze().zeModuleBuildLogGetString(log, &size, buffer.data()) == ZE_RESULT_SUCCESS)
            text.assign(buffer.data(), size > 0 ? size - 1 : 0);
    }
    (void)ze().zeModuleBuildLogDestroy(log);
    return plugin::bounded_text(text, kMaxLogInMessage);
}

}  // namespace

ModuleCache::ModuleCache(ze_context_handle_t context, ze_device_handle_t device,
                         const DeviceLimits& limits) noexcept
    : context_(context), device_(device), fp64_(limits.fp64) {}

Result<ze_module_handle_t> ModuleCache::get(SpirvModule which) {
    const SpirvImage& image = which == SpirvModule::core ? kSpirvCore : kSpirvFp64;
    if (image.size == 0)
        return Error(KEEL_STATUS_NOT_FOUND,
                     std::string("this plugin was built without SPIR-V kernels: ") + kSpirvMissingReason);
    if (which == SpirvModule::fp64 && !fp64_)
        return Error(KEEL_STATUS_UNIMPLEMENTED, "the device has no fp64 (ZE_DEVICE_MODULE_FLAG_FP64 is not set)");
    std::lock_guard lock(mutex_);
    ze_module_handle_t& slot = modules_[static_cast<std::size_t>(which)];
    if (slot != nullptr) return slot;
    ze_module_desc_t desc{ZE_STRUCTURE_TYPE_MODULE_DESC, nullptr, ZE_MODULE_FORMAT_IL_SPIRV, image.size,
                          image.data, "", nullptr};
    ze_module_handle_t module = nullptr;
    ze_module_build_log_handle_t log = nullptr;
    const ZeCall built = KEEL_ZE(zeModuleCreate, context_, device_, &desc, &module, &log);
    std::string log_text = take_build_log(log);
    if (!built.ok()) {
        std::string context = std::string("the plugin's SPIR-V module '") + module_name(which) + "'";
        if (!log_text.empty()) context += "; build log: " + log_text;
        return built.error(context);
    }
    slot = module;
    return slot;
}

void ModuleCache::release_all() noexcept {
    std::lock_guard lock(mutex_);
    for (ze_module_handle_t& m : modules_) {
        if (m != nullptr) (void)ze().zeModuleDestroy(m);
        m = nullptr;
    }
}

}  // namespace keel::level_zero
