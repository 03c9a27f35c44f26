// Level Zero results turned into keel's: a keel status, and a message that
// names the failed function and the result as Level Zero spells it
// ("zeCommandListAppendMemoryCopy: ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY"), so
// a user can search for exactly what the driver said.
#pragma once

#include "ze_loader.hpp"

#include <keel/result.hpp>

#include <level_zero/ze_api.h>

#include <string>
#include <string_view>

namespace keel::level_zero {

// "ZE_RESULT_ERROR_DEVICE_LOST"; "ze_result_t 0x7ff00042" for a value this
// plugin's headers do not know.
[[nodiscard]] std::string ze_result_name(ze_result_t result);

// The keel status closest to a result (OUT_OF_*_MEMORY -> OUT_OF_MEMORY,
// DEVICE_LOST -> DEVICE_ERROR, UNINITIALIZED -> UNAVAILABLE, ...).
[[nodiscard]] Status status_from_ze(ze_result_t result) noexcept;

// Whether the device is gone after this result: every later use of it fails.
[[nodiscard]] bool is_device_fatal(ze_result_t result) noexcept;

// One Level Zero call's outcome, with the function's name for the message.
struct ZeCall {
    const char* function;
    ze_result_t result;

    [[nodiscard]] bool ok() const noexcept { return result == ZE_RESULT_SUCCESS; }
    // "<function>: <result name>", and " (<context>)" when given.
    [[nodiscard]] Error error(std::string_view context = {}) const;
    [[nodiscard]] Result<void> check(std::string_view context = {}) const {
        if (ok()) return ::keel::ok();
        return error(context);
    }
};

// A zero-initialised Level Zero struct with its structure type set.
template <class T>
[[nodiscard]] T ze_struct(ze_structure_type_t type) noexcept {
    T value{};
    value.stype = type;
    return value;
}

}  // namespace keel::level_zero

// Calls a loader function and keeps its name: KEEL_ZE(zeMemFree, ctx, ptr).check()
#define KEEL_ZE(fn, ...) \
    (::keel::level_zero::ZeCall{#fn, ::keel::level_zero::ze().fn(__VA_ARGS__)})
