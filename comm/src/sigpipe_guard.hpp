// SIGPIPE blocked on the calling thread while Gloo writes: a write to a
// peer that died must fail with EPIPE, not kill the process.
#pragma once

#include <csignal>
#include <ctime>
#include <exception>
#include <pthread.h>

namespace keel::comm {

// Blocks SIGPIPE for its life on this thread. A SIGPIPE raised meanwhile
// is taken before the old mask comes back. Only a failed write raises one,
// and a failed write makes Gloo throw, so the guard looks for it only when
// an exception leaves its scope. Neither Send nor Sync: it restores its own
// thread's mask.
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
        if (std::uncaught_exceptions() > exceptions_) {
            sigset_t pending;
            const timespec zero{0, 0};
            if (sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE)) (void)sigtimedwait(&pipe_, nullptr, &zero);
        }
        pthread_sigmask(SIG_SETMASK, &previous_, nullptr);
    }

private:
    sigset_t pipe_;
    sigset_t previous_;
    const int exceptions_ = std::uncaught_exceptions();
};

}  // namespace keel::comm
