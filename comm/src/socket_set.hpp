// The sockets of one communicator's Gloo pairs, so that abort() can wake a
// collective already waiting inside Gloo: Gloo 0.5 (Debian's) has no call
// that wakes the waits of a running collective (closing its pairs from
// another thread leaves them waiting for the timeout), but a socket shut
// down under it makes its event loop see the connection end, and every wait
// on that pair fails at once.
//
// Gloo keeps its descriptors to itself (and Debian's headers for its tcp
// pair do not compile), but a connected pair's public address() is its
// socket's local end (address and port), which no other connected socket
// of the host has. The process's descriptors are only asked their local
// address (getsockname: no effect on them); one whose local end is one of
// the pairs' is duplicated and checked again on the copy, so a socket
// another thread opens, or a descriptor Gloo closes and the process reuses,
// is never duplicated, shut down or closed. The copies are ours to shut
// down and close. Move-only; shut_down() from any thread.
#pragma once

#include <sys/socket.h>

#include <vector>

namespace keel::comm {

class SocketSet {
public:
    SocketSet() = default;
    // Duplicates of the process's connected stream sockets whose local end
    // is one of `ends` (IPv4 or IPv6 address and port).
    [[nodiscard]] static SocketSet with_local_ends(const std::vector<sockaddr_storage>& ends);

    SocketSet(SocketSet&& other) noexcept : fds_(std::move(other.fds_)) { other.fds_.clear(); }
    SocketSet& operator=(SocketSet&& other) noexcept;
    SocketSet(const SocketSet&) = delete;
    SocketSet& operator=(const SocketSet&) = delete;
    ~SocketSet();

    // shutdown(SHUT_RDWR) of every socket: the connections end for both sides.
    void shut_down() const noexcept;
    [[nodiscard]] std::size_t size() const noexcept { return fds_.size(); }

private:
    void close_all() noexcept;
    std::vector<int> fds_;
};

}  // namespace keel::comm
