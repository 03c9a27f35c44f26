// Handles over a Unix socket: a fixed-size message, with the descriptor
// (if any) attached to it as SCM_RIGHTS.
#include <keel/ipc.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace keel::ipc {
namespace {

// What travels: the C handle's fields (the descriptor's number does not).
struct WireHandle {
    static constexpr std::uint32_t kMagic = 0x4350494B;  // "KIPC"
    std::uint32_t magic = kMagic;
    std::uint32_t version = 1;
    std::uint32_t kind = 0;
    std::uint32_t has_fd = 0;
    std::uint64_t size = 0;
    std::uint32_t byte_count = 0;
    std::uint32_t reserved = 0;
    std::uint8_t bytes[KEEL_IPC_HANDLE_MAX_BYTES] = {};
};

Error socket_error(const char* where, const std::string& what) {
    return Error(KEEL_STATUS_UNAVAILABLE, std::string("[") + where + "] " + what + ": " + std::strerror(errno));
}

}  // namespace

Result<void> send_handle(int socket, const Handle& handle) {
    if (handle.empty()) return Error(KEEL_STATUS_INVALID_ARGUMENT, "[ipc::send_handle] the handle is empty");
    WireHandle w;
    w.kind = static_cast<std::uint32_t>(handle.kind());
    w.has_fd = handle.fd() >= 0 ? 1 : 0;
    w.size = handle.size();
    w.byte_count = static_cast<std::uint32_t>(handle.bytes().size());
    std::memcpy(w.bytes, handle.bytes().data(), handle.bytes().size());

    const auto* data = reinterpret_cast<const char*>(&w);
    std::size_t sent = 0;
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
    while (sent < sizeof w) {
        iovec iov{const_cast<char*>(data + sent), sizeof w - sent};
        msghdr msg{};
        msg.msg_iov = &iov;
        msg.msg_iovlen = 1;
        if (sent == 0 && w.has_fd) {  // the descriptor rides on the first byte
            msg.msg_control = control;
            msg.msg_controllen = sizeof control;
            cmsghdr* c = CMSG_FIRSTHDR(&msg);
            c->cmsg_level = SOL_SOCKET;
            c->cmsg_type = SCM_RIGHTS;
            c->cmsg_len = CMSG_LEN(sizeof(int));
            const int fd = handle.fd();
            std::memcpy(CMSG_DATA(c), &fd, sizeof fd);
        }
        const ssize_t n = ::sendmsg(socket, &msg, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR) continue;
            return socket_error("ipc::send_handle", "sendmsg on socket " + std::to_string(socket));
        }
        sent += static_cast<std::size_t>(n);
    }
    return ok();
}

Result<Handle> receive_handle(int socket, std::chrono::milliseconds timeout) {
    WireHandle w;
    auto* data = reinterpret_cast<char*>(&w);
    std::size_t got = 0;
    int fd = -1;
    // Owns the received descriptor until it is handed to the Handle.
    struct Closer {
        int& fd;
        ~Closer() {
            if (fd >= 0) ::close(fd);
        }
    } closer{fd};
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (got < sizeof w) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline -
                                                                                std::chrono::steady_clock::now());
        pollfd p{socket, POLLIN, 0};
        const int ready = ::poll(&p, 1, static_cast<int>(std::max<std::int64_t>(0, left.count())));
        if (ready < 0) {
            if (errno == EINTR) continue;
            return socket_error("ipc::receive_handle", "poll on socket " + std::to_string(socket));
        }
        if (ready == 0)
            return Error(KEEL_STATUS_UNAVAILABLE, "[ipc::receive_handle] no handle arrived on socket " +
                                                      std::to_string(socket) + " within " +
                                                      std::to_string(timeout.count()) + " ms");
        iovec iov{data + got, sizeof w - got};
        alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 4)] = {};
        msghdr msg{};
        msg.msg_iov = &iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control;
        msg.msg_controllen = sizeof control;
        const ssize_t n = ::recvmsg(socket, &msg, MSG_CMSG_CLOEXEC);
        if (n < 0) {
            if (errno == EINTR || errno == EAGAIN) continue;
            return socket_error("ipc::receive_handle", "recvmsg on socket " + std::to_string(socket));
        }
        for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
            if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
            const std::size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
            for (std::size_t i = 0; i < count; ++i) {
                int received = -1;
                std::memcpy(&received, CMSG_DATA(c) + i * sizeof(int), sizeof received);
                if (fd < 0) fd = received;
                else ::close(received);  // one descriptor per handle: extras are not ours to keep
            }
        }
        if (n == 0)
            return Error(KEEL_STATUS_UNAVAILABLE, "[ipc::receive_handle] the peer closed socket " +
                                                      std::to_string(socket) + " (" + std::to_string(got) +
                                                      " of " + std::to_string(sizeof w) + " bytes of a handle received)");
        got += static_cast<std::size_t>(n);
    }
    if (w.magic != WireHandle::kMagic || w.version != 1 || w.byte_count > KEEL_IPC_HANDLE_MAX_BYTES ||
        (w.kind != KEEL_IPC_HANDLE_MEMORY && w.kind != KEEL_IPC_HANDLE_EVENT))
        return Error(KEEL_STATUS_INVALID_ARGUMENT,
                     "[ipc::receive_handle] what arrived on socket " + std::to_string(socket) +
                         " is not a handle sent by ipc::send_handle");
    if ((w.has_fd != 0) != (fd >= 0))
        return Error(KEEL_STATUS_INVALID_ARGUMENT,
                     std::string("[ipc::receive_handle] the handle ") +
                         (w.has_fd ? "was sent with a descriptor that did not arrive (is the socket a Unix socket?)"
                                   : "arrived with a descriptor it was not sent with"));
    keel_ipc_handle c = Handle().c_handle();
    c.kind = static_cast<keel_ipc_handle_kind>(w.kind);
    c.size = w.size;
    c.byte_count = w.byte_count;
    std::memcpy(c.bytes, w.bytes, w.byte_count);
    c.fd = std::exchange(fd, -1);
    return Handle::adopt(c);
}

}  // namespace keel::ipc
