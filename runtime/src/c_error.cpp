#include "c_error.hpp"

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

}  // namespace keel::detail
