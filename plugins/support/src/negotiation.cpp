#include <keel/plugin/boundary.hpp>
#include <keel/plugin/negotiation.hpp>

#include <algorithm>
#include <cstring>
#include <string>

namespace keel::plugin {

namespace {
// The fields of keel_host_services read before the runtime's version is known.
constexpr std::size_t kHostVersionFieldsEnd = KEEL_STRUCT_SIZE(keel_host_services, abi_minor);
}  // namespace

Result<void> check_host_services(const keel_host_services* host) {
    KEEL_TRY(require_non_null(host, "host services"));
    if (host->struct_size < kHostVersionFieldsEnd)
        return Error(KEEL_STATUS_INVALID_ARGUMENT, "host services struct_size " + std::to_string(host->struct_size) +
                                                       " is too small to hold the ABI version");
    if (host->abi_major != KEEL_ABI_VERSION_MAJOR)
        return Error(KEEL_STATUS_VERSION_MISMATCH,
                     "the runtime offers ABI " + std::to_string(host->abi_major) + "." +
                         std::to_string(host->abi_minor) + ", this plugin implements " +
                         std::to_string(KEEL_ABI_VERSION_MAJOR) + "." + std::to_string(KEEL_ABI_VERSION_MINOR));
    return ok();
}

Result<void> write_plugin_info(keel_plugin_info* out, const char* device_type, const char* version,
                               const char* status) {
    KEEL_TRY(require_non_null(out, "out"));
    if (out->struct_size < sizeof(out->struct_size))
        return Error(KEEL_STATUS_INVALID_ARGUMENT, "out->struct_size is not set");
    if (out->struct_size >= KEEL_STRUCT_SIZE(keel_plugin_info, device_type)) out->device_type = device_type;
    if (out->struct_size >= KEEL_STRUCT_SIZE(keel_plugin_info, version)) out->version = version;
    if (out->struct_size >= KEEL_STRUCT_SIZE(keel_plugin_info, status)) out->status = status;
    return ok();
}

Result<void> write_device_properties(keel_device_properties* out, const keel_device_properties& full) {
    KEEL_TRY(require_non_null(out, "out"));
    if (out->struct_size < sizeof(out->struct_size))
        return Error(KEEL_STATUS_INVALID_ARGUMENT, "out->struct_size is not set");
    const std::size_t end = std::min<std::size_t>(out->struct_size, sizeof full);
    constexpr std::size_t begin = sizeof full.struct_size;
    std::memcpy(reinterpret_cast<char*>(out) + begin, reinterpret_cast<const char*>(&full) + begin, end - begin);
    return ok();
}

}  // namespace keel::plugin
