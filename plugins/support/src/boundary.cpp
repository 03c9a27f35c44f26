#include <keel/plugin/boundary.hpp>

#include <memory>

namespace keel::plugin {
namespace {

// keel_error must be the first member: the C side sees a keel_error*.
struct OwnedError {
    keel_error c;
    std::string text;
};

void destroy_owned(keel_error* e) noexcept {
    std::unique_ptr<OwnedError> owned(reinterpret_cast<OwnedError*>(e));
}

// Returned when even the error cannot be allocated.
keel_error g_oom_error{KEEL_ERROR_STRUCT_SIZE, KEEL_STATUS_OUT_OF_MEMORY,
                       "[plugin] out of host memory while reporting an error",
                       [](keel_error*) {}};

}  // namespace

keel_error* make_c_error(Status code, std::string message) noexcept {
    try {
        auto owned = std::make_unique<OwnedError>();
        owned->text = std::move(message);
        owned->c.struct_size = KEEL_ERROR_STRUCT_SIZE;
        owned->c.code = code;
        owned->c.message = owned->text.c_str();
        owned->c.destroy = &destroy_owned;
        return &owned.release()->c;
    } catch (...) {
        return &g_oom_error;
    }
}

}  // namespace keel::plugin
