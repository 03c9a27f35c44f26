// The sockets of one communicator's Gloo pairs, so that abort() can wake a
// collective already waiting inside Gloo: Gloo 0.5 (Debian's) has no call
// that wakes the waits of a running collective (closing its pairs from
// another thread leaves them waiting for the timeout), but a socket shut
// down under it makes its event loop see the connection end, and every wait
// on that pair fails at once.
//
// Gloo keeps its descriptors to itself (and Debian's headers for its tcp
// pair do not compile), so they are found as the connected sockets that
// appeared while the mesh connected, and duplicated at once: the copies are
// ours to shut down and close, so a descriptor Gloo closes later (and the
// process reuses) is never touched. A socket another thread of the process
// connected during those milliseconds would be taken too: create
// communicators while no other thread opens connections, if abort() must
// touch nothing else. Move-only; shut_down() from any thread.
#pragma once

#include <sys/types.h>

#include <vector>

namespace keel::comm {

class SocketSet {
public:
    SocketSet() = default;
    // The descriptors of the process's sockets now (not duplicated).
    struct Snapshot {
        std::vector<std::pair<int, ino_t>> sockets;
    };
    [[nodiscard]] static Snapshot snapshot();
    // Duplicates of the connected stream sockets in `after` but not in `before`.
    [[nodiscard]] static SocketSet opened_between(const Snapshot& before, const Snapshot& after);

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
