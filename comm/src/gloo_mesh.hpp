// A communicator's connected Gloo context, and everything Gloo's event loop
// may still touch after an operation failed midway: the operation's staging
// and buffers. The loop fills or signals them until the context closes its
// pairs, so the mesh owns both and its destructor closes the context first,
// then releases what it kept: the order is this type's, not a member list's.
// Gloo's per-call options copy the context pointer for the call only.
//
// Sync: keep_until_closed() and shut_down_sockets() from any thread; the
// context is used by one operation at a time (the communicator's queue).
#pragma once

#include "socket_set.hpp"

#include <gloo/rendezvous/context.h>

#include <memory>
#include <mutex>
#include <vector>

namespace keel::comm {

class GlooMesh {
public:
    GlooMesh(std::shared_ptr<gloo::rendezvous::Context> context, SocketSet sockets) noexcept
        : context_(std::move(context)), sockets_(std::move(sockets)) {}
    // Closes the context's pairs (waiting for the event loop to let go of
    // them), then frees what failed operations left.
    ~GlooMesh();
    GlooMesh(const GlooMesh&) = delete;
    GlooMesh& operator=(const GlooMesh&) = delete;

    // For Gloo's options of one call (which hold a copy during the call).
    [[nodiscard]] const std::shared_ptr<gloo::rendezvous::Context>& context() const noexcept { return context_; }
    [[nodiscard]] int size() const noexcept { return context_->size; }

    // Keeps `leftover` (memory a failed operation gave Gloo, or the
    // operation itself) until the pairs are closed.
    void keep_until_closed(std::shared_ptr<void> leftover);
    // Ends every connection of the mesh (abort(): wakes a collective inside Gloo).
    void shut_down_sockets() const noexcept { sockets_.shut_down(); }
    // The ranks whose connection ended (SocketSet::ended_peers).
    [[nodiscard]] std::vector<int> ended_peers() const { return sockets_.ended_peers(); }
    // SocketSet::wait_for_ended.
    [[nodiscard]] std::vector<int> wait_for_ended(int wake, std::vector<bool>& reported) const {
        return sockets_.wait_for_ended(wake, reported);
    }

private:
    std::shared_ptr<gloo::rendezvous::Context> context_;
    SocketSet sockets_;
    std::mutex mutex_;
    std::vector<std::shared_ptr<void>> leftovers_;  // guarded by mutex_
};

}  // namespace keel::comm
