// The sockets of one communicator's Gloo pairs, so that abort() can wake a
// collective already waiting inside Gloo: Gloo 0.5 (Debian's) has no call
// that wakes the waits of a running collective (closing its pairs from
// another thread leaves them waiting for the timeout), but a socket shut
// down under it makes its event loop see the connection end, and every wait
// on that pair fails at once.
//
// Gloo keeps its descriptors to itself (and Debian's headers for its tcp
// pair do not compile), but a connected pair's public address() is its
// socket's local end (address and port), and the peer's pair's address()
// is that socket's remote end; the ranks tell each other theirs through the
// store (rendezvous.cpp). Both ends are needed: Linux gives a connecting
// socket a local port another connected socket already has when their
// remote ends differ (one in a few thousand connections opened by another
// thread matched a pair's local end alone). The process's descriptors are
// only asked their local address (getsockname: no effect on them); one with
// a pair's local end is duplicated and checked on the copy, both ends, so a
// socket another thread opens, or a descriptor Gloo closes and the process
// reuses, is never duplicated, shut down or closed. The copies are ours to
// shut down and close. Move-only; shut_down() from any thread.
#pragma once

#include <sys/socket.h>

#include <vector>

namespace keel::comm {

// One connection's two ends (IPv4 or IPv6 address and port), and the rank
// at the other end (-1: not known).
struct Connection {
    sockaddr_storage local;
    sockaddr_storage remote;
    int peer = -1;
};

class SocketSet {
public:
    SocketSet() = default;
    // Duplicates of the process's connected stream sockets that are one of
    // `connections` (both ends).
    [[nodiscard]] static SocketSet with_connections(const std::vector<Connection>& connections);

    SocketSet(SocketSet&& other) noexcept : fds_(std::move(other.fds_)), peers_(std::move(other.peers_)) {
        other.fds_.clear();
        other.peers_.clear();
    }
    SocketSet& operator=(SocketSet&& other) noexcept;
    SocketSet(const SocketSet&) = delete;
    SocketSet& operator=(const SocketSet&) = delete;
    ~SocketSet();

    // shutdown(SHUT_RDWR) of every socket: the connections end for both sides.
    void shut_down() const noexcept;
    [[nodiscard]] std::size_t size() const noexcept { return fds_.size(); }
    // The ranks whose connection has ended (the other side closed or shut
    // it down, or it was reset): how a failure names a dead peer by rank.
    // Meaningless after shut_down(), which ends them all.
    [[nodiscard]] std::vector<int> ended_peers() const;
    // Blocks until a connection not yet marked in `reported` (one entry per
    // rank) ends, or `wake` (a descriptor) becomes readable; marks and
    // returns the ranks whose connections ended, empty when woken.
    [[nodiscard]] std::vector<int> wait_for_ended(int wake, std::vector<bool>& reported) const;

private:
    void close_all() noexcept;
    std::vector<int> fds_;
    std::vector<int> peers_;  // the rank at the other end of fds_[i]
};

}  // namespace keel::comm
