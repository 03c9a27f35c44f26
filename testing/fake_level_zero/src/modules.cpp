// Modules (validated SPIR-V whose kernels have host twins) and kernels
// (arguments checked against the module's parameter sizes).
#include "api.hpp"
#include "fake.hpp"
#include "host_kernels.hpp"
#include "spirv.hpp"

#include <cstring>

namespace fake_ze::api {

namespace {

struct BuildLog {
    std::string text;
};

ze_result_t make_log(ze_module_build_log_handle_t* log, std::string text) {
    if (log != nullptr) {
        *log = to_handle<ze_module_build_log_handle_t>(std::make_unique<BuildLog>(BuildLog{std::move(text)}).release());
        ++Driver::get().live;
    }
    return ZE_RESULT_SUCCESS;
}

}  // namespace

ze_result_t ZE_APICALL zeModuleCreate(ze_context_handle_t context, ze_device_handle_t device,
                                      const ze_module_desc_t* desc, ze_module_handle_t* module,
                                      ze_module_build_log_handle_t* log) {
    FAKE_ZE_INJECT("zeModuleCreate");
    if (log != nullptr) *log = nullptr;
    if (context == nullptr || device == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (desc == nullptr || module == nullptr || desc->pInputModule == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (desc->format != ZE_MODULE_FORMAT_IL_SPIRV) return ZE_RESULT_ERROR_INVALID_NATIVE_BINARY;
    SpirvKernels spirv = read_spirv(desc->pInputModule, desc->inputSize);
    if (!spirv.error.empty()) {
        (void)make_log(log, "fake Level Zero driver: " + spirv.error);
        return ZE_RESULT_ERROR_MODULE_BUILD_FAILURE;
    }
    auto m = std::make_unique<Module>();
    m->context = from_handle<Context>(context);
    m->device = from_handle<Device>(device);
    m->entry_points = std::move(spirv.kernels);
    std::string names;
    for (const auto& [name, params] : m->entry_points) names += " " + name;
    Driver& driver = Driver::get();
    {
        std::lock_guard lock(driver.mutex);
        if (m->device->lost) return ZE_RESULT_ERROR_DEVICE_LOST;
        ++m->context->objects;
        ++driver.live;
    }
    *module = to_handle<ze_module_handle_t>(m.release());
    return make_log(log, "fake Level Zero driver: kernels" + names);
}

ze_result_t ZE_APICALL zeModuleDestroy(ze_module_handle_t handle) {
    if (handle == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    std::unique_ptr<Module> m(from_handle<Module>(handle));
    Driver& driver = Driver::get();
    std::lock_guard lock(driver.mutex);
    if (m->kernels != 0) violation("zeModuleDestroy with " + std::to_string(m->kernels) + " of its kernels alive");
    --m->context->objects;
    --driver.live;
    return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL zeModuleBuildLogGetString(ze_module_build_log_handle_t log, size_t* size, char* text) {
    if (log == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (size == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    const std::string& s = from_handle<BuildLog>(log)->text;
    if (text != nullptr) {
        const std::size_t n = std::min(*size, s.size() + 1);
        if (n > 0) {
            std::memcpy(text, s.c_str(), n - 1);
            text[n - 1] = '\0';
        }
    }
    *size = s.size() + 1;
    return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL zeModuleBuildLogDestroy(ze_module_build_log_handle_t log) {
    if (log == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    std::unique_ptr<BuildLog> owned(from_handle<BuildLog>(log));
    --Driver::get().live;
    return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL zeKernelCreate(ze_module_handle_t module_handle, const ze_kernel_desc_t* desc,
                                      ze_kernel_handle_t* kernel) {
    FAKE_ZE_INJECT("zeKernelCreate");
    if (module_handle == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (desc == nullptr || kernel == nullptr || desc->pKernelName == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    Module& m = *from_handle<Module>(module_handle);
    const auto entry = m.entry_points.find(desc->pKernelName);
    if (entry == m.entry_points.end()) return ZE_RESULT_ERROR_INVALID_KERNEL_NAME;
    const HostKernel* twin = find_host_kernel(desc->pKernelName);
    if (twin == nullptr)
        violation(std::string("the module's kernel ") + desc->pKernelName +
                  " has no host twin in testing/fake_level_zero/src/host_kernels.cpp");
    // The twin is compiled from the same source as the SPIR-V: their
    // parameters must agree, or the C++ and OpenCL layouts have drifted.
    const std::vector<std::uint32_t>& sizes = entry->second;
    if (sizes.size() != twin->params.size())
        violation(std::string("kernel ") + desc->pKernelName + ": " + std::to_string(sizes.size()) +
                  " parameters in SPIR-V, " + std::to_string(twin->params.size()) + " in its host twin");
    for (std::size_t i = 0; i < sizes.size(); ++i)
        if (sizes[i] != twin->params[i].size)
            violation(std::string("kernel ") + desc->pKernelName + ": parameter " + std::to_string(i) + " is " +
                      std::to_string(sizes[i]) + " bytes in SPIR-V, " + std::to_string(twin->params[i].size) +
                      " in its host twin");
    auto k = std::make_unique<Kernel>();
    k->module = &m;
    k->name = desc->pKernelName;
    k->twin = twin;
    k->param_sizes = sizes;
    k->args.resize(sizes.size());
    Driver& driver = Driver::get();
    {
        std::lock_guard lock(driver.mutex);
        ++m.kernels;
        ++driver.live;
    }
    *kernel = to_handle<ze_kernel_handle_t>(k.release());
    return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL zeKernelDestroy(ze_kernel_handle_t handle) {
    if (handle == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    std::unique_ptr<Kernel> k(from_handle<Kernel>(handle));
    Driver& driver = Driver::get();
    std::lock_guard lock(driver.mutex);
    --k->module->kernels;
    --driver.live;
    return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL zeKernelSetGroupSize(ze_kernel_handle_t handle, uint32_t x, uint32_t y, uint32_t z) {
    if (handle == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (x == 0 || y == 0 || z == 0 || x * y * z > 1024) return ZE_RESULT_ERROR_INVALID_GROUP_SIZE_DIMENSION;
    Kernel& k = *from_handle<Kernel>(handle);
    if (k.in_call.exchange(true, std::memory_order_acquire)) violation("a kernel used by two threads at once");
    k.group_size[0] = x;
    k.group_size[1] = y;
    k.group_size[2] = z;
    k.in_call.store(false, std::memory_order_release);
    return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL zeKernelSetArgumentValue(ze_kernel_handle_t handle, uint32_t index, size_t size,
                                                const void* value) {
    FAKE_ZE_INJECT("zeKernelSetArgumentValue");
    if (handle == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    Kernel& k = *from_handle<Kernel>(handle);
    if (index >= k.param_sizes.size()) return ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_INDEX;
    if (size != k.param_sizes[index]) return ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE;
    if (k.in_call.exchange(true, std::memory_order_acquire)) violation("a kernel used by two threads at once");
    // Copied now, as the specification says: the caller may reuse `value`.
    std::vector<std::byte> bytes(size);
    if (value != nullptr) std::memcpy(bytes.data(), value, size);
    k.args[index] = std::move(bytes);
    k.in_call.store(false, std::memory_order_release);
    return ZE_RESULT_SUCCESS;
}

}  // namespace fake_ze::api
