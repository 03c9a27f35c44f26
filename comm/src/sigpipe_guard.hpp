// SIGPIPE blocked on the calling thread while Gloo writes: a write to a
// peer that died must fail with EPIPE, not kill the process.
#pragma once

#include <csignal>
#include <ctime>
#include <pthread.h>

namespace keel::comm {

// Blocks SIGPIPE for its life on this thread. A SIGPIPE raised meanwhile
// is always taken before the old mask comes back: a failed write need not
// make Gloo throw (its asynchronous write returns false on EPIPE and leaves
// the error to the pair's next wait), so an exception is no sign of it.
// Neither Send nor Sync: it restores its own thread's mask.
class SigpipeBlocked {
public:
    SigpipeBlocked() noexcept {
        sigemptyset(&pipe_);
        sigaddset(&pipe_, SIGPIPE);
        pthread_sigmask(SIG_BLOCK, &pipe_, &previous_);
    }
    SigpipeBlocked(const SigpipeBlocked&) = delete;
    SigpipeBlocked& operator=(const SigpipeBlocked&) = delete;
    ~SigpipeBlocked() {
        if (sigismember(&previous_, SIGPIPE)) return;  // was blocked: leave it so
        sigset_t pending;
        const timespec zero{0, 0};
        if (sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE)) (void)sigtimedwait(&pipe_, nullptr, &zero);
        pthread_sigmask(SIG_SETMASK, &previous_, nullptr);
    }

private:
    sigset_t pipe_;
    sigset_t previous_;
};

}  // namespace keel::comm
