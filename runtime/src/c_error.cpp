#include "c_error.hpp"

#include <memory>
#include <string>

namespace keel::detail {

Result<void> take_error(keel_error* error) noexcept {
    if (error == nullptr) return ok();
    Status code = error->code;
    std::string message = error->message != nullptr ? error->message : "(error without a message)";
    if (code == KEEL_STATUS_OK) {
        code = KEEL_STATUS_INTERNAL;
        message = "plugin returned an error object with status OK: " + message;
    }
    if (error->destroy != nullptr) error->destroy(error);
    return Error(code, std::move(message));
}

namespace {
// keel_error first: the plugin sees a keel_error*.
struct OwnedError {
    keel_error c;
    std::string text;
};
}  // namespace

keel_error* make_c_error(const Error& error) noexcept {
    try {
        auto owned = std::make_unique<OwnedError>();
        owned->text = error.message();
        owned->c.struct_size = KEEL_ERROR_STRUCT_SIZE;
        owned->c.code = error.code() == KEEL_STATUS_OK ? KEEL_STATUS_INTERNAL : error.code();
        owned->c.message = owned->text.c_str();
        owned->c.destroy = [](keel_error* e) { std::unique_ptr<OwnedError>(reinterpret_cast<OwnedError*>(e)); };
        return &owned.release()->c;
    } catch (...) {
        return nullptr;
    }
}

}  // namespace keel::detail
