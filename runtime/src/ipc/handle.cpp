#include <keel/ipc.hpp>

#include <cstring>
#include <utility>

#include <unistd.h>

namespace keel::ipc {
namespace {
keel_ipc_handle empty_handle() noexcept {
    keel_ipc_handle h;
    std::memset(&h, 0, sizeof h);
    h.struct_size = sizeof h;
    h.kind = KEEL_IPC_HANDLE_NONE;
    h.fd = -1;
    return h;
}
}  // namespace

Handle::Handle() noexcept : c_(empty_handle()) {}

Handle::Handle(Handle&& other) noexcept : c_(std::exchange(other.c_, empty_handle())) {}

Handle& Handle::operator=(Handle&& other) noexcept {
    if (this != &other) {
        if (c_.fd >= 0) ::close(c_.fd);
        c_ = std::exchange(other.c_, empty_handle());
    }
    return *this;
}

Handle::~Handle() {
    if (c_.fd >= 0) ::close(c_.fd);
}

Handle Handle::adopt(const keel_ipc_handle& handle) noexcept {
    Handle h;
    const std::size_t n = handle.struct_size < sizeof h.c_ ? handle.struct_size : sizeof h.c_;
    std::memcpy(&h.c_, &handle, n);
    h.c_.struct_size = sizeof h.c_;
    if (h.c_.byte_count > KEEL_IPC_HANDLE_MAX_BYTES) h.c_.byte_count = KEEL_IPC_HANDLE_MAX_BYTES;
    return h;
}

}  // namespace keel::ipc
