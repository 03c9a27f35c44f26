// keel::Error <-> keel_error*: the two conversions at every C ABI boundary,
// written once for the runtime, the plugins and extensions that call a
// plugin's table themselves. Header-only (keel::base).
#pragma once

#include <keel/keel.h>
#include <keel/result.hpp>

#include <memory>
#include <string>
#include <utility>

namespace keel {

namespace c_error_detail {

// keel_error must be the first member: the C side sees a keel_error*.
struct OwnedError {
    keel_error c;
    std::string text;
};

inline void destroy_owned(keel_error* e) noexcept { std::unique_ptr<OwnedError> owned(reinterpret_cast<OwnedError*>(e)); }

// Returned when even the error cannot be allocated; its destroy does nothing.
inline keel_error out_of_memory{KEEL_ERROR_STRUCT_SIZE, KEEL_STATUS_OUT_OF_MEMORY,
                                "out of host memory while reporting an error", [](keel_error*) {}};

}  // namespace c_error_detail

// A heap-allocated keel_error that owns its message, released by its own
// destroy (so the receiver frees it with keel_error_destroy, whoever made it).
// Never null: when memory runs out, a static OUT_OF_MEMORY error. A code of
// OK would read as success, so it becomes INTERNAL.
[[nodiscard]] inline keel_error* make_c_error(Status code, std::string message) noexcept {
    try {
        auto owned = std::make_unique<c_error_detail::OwnedError>();
        owned->text = std::move(message);
        owned->c.struct_size = KEEL_ERROR_STRUCT_SIZE;
        owned->c.code = code == KEEL_STATUS_OK ? KEEL_STATUS_INTERNAL : code;
        owned->c.message = owned->text.c_str();
        owned->c.destroy = &c_error_detail::destroy_owned;
        return &owned.release()->c;
    } catch (...) {
        return &c_error_detail::out_of_memory;
    }
}

[[nodiscard]] inline keel_error* to_c_error(Error error) noexcept {
    return make_c_error(error.code(), std::move(error).message());
}

// The other way, for an error a callee returned or a caller handed over:
// ok() for null; otherwise its code and message, after destroying it exactly
// once. A malformed error (status OK, no message, no destroy) is not trusted: status OK
// becomes INTERNAL, a null message a placeholder.
[[nodiscard]] inline Result<void> take_c_error(keel_error* error) noexcept {
    if (error == nullptr) return ok();
    struct Destroy {
        keel_error* e;
        ~Destroy() {
            if (e->destroy != nullptr) e->destroy(e);  // a malformed error may lack one
        }
    } destroy{error};
    try {
        std::string message = error->message != nullptr ? error->message : "(error without a message)";
        if (error->code == KEEL_STATUS_OK)
            return Error(KEEL_STATUS_INTERNAL, "an error object with status OK: " + message);
        return Error(error->code, std::move(message));
    } catch (...) {
        return Error(KEEL_STATUS_OUT_OF_MEMORY, "out of host memory while reading an error");
    }
}

}  // namespace keel
