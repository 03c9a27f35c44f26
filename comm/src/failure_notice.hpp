// Why a communicator failed, told to every rank through the store: the rank
// that fails it first posts "rank R: <its error>" under the communicator's
// own key, so a peer whose operation ends because of it (its connections
// closed, or its native engine was aborted for it) names that rank and its
// cause instead of a closed connection or a timeout.
//
// Every store call here is bounded and best effort: it runs on a thread of
// its own that the caller waits for at most a bound, so a store that is gone
// or stuck costs the caller that bound, never a hang (the call, if it ever
// returns, finishes on its own). A failure that could not be posted in time
// leaves the peers with the error they saw.
#pragma once

#include <keel/comm.hpp>

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <string>

namespace keel::comm {

// The longest a failing rank waits for the store to take its error before
// it ends its connections (or aborts its engine), and a reader for the
// store's answer.
inline constexpr std::chrono::milliseconds kNoticeBound{500};

// The failure a peer posted.
struct PeerFailure {
    int rank = -1;
    std::string error;  // its error's message
    // Its error was a mismatch between the ranks (FAILED_PRECONDITION: the
    // caller's mistake, not the network's), so the peers' errors say so too.
    bool mismatch = false;

    // The code a peer's error carries when it names this failure.
    [[nodiscard]] keel_status code() const noexcept {
        return mismatch ? KEEL_STATUS_FAILED_PRECONDITION : KEEL_STATUS_UNAVAILABLE;
    }
};

// Threads: Send and Sync (post() once, by whoever fails the communicator
// first; read() from any thread).
class FailureNotice {
public:
    // The key under the communicator `name` (the store is scoped to the job)
    // of `size` ranks; a group of one has nobody to tell: nothing is posted.
    FailureNotice(Store store, const std::string& name, int rank, int size);
    // Erases the key when this rank posted it (bounded, best effort): a
    // peer that reads after that names only what it saw.
    ~FailureNotice();
    FailureNotice(const FailureNotice&) = delete;
    FailureNotice& operator=(const FailureNotice&) = delete;

    // A key a job that ended left under `name`: erased before the ranks
    // meet (no rank can post before every rank met), so a new communicator
    // under the same name never reads an old failure.
    static void clear_stale(const Store& store, const std::string& name, int size);

    // Posts "rank R: <message>" ("rank R (mismatch): ..." for a mismatch)
    // unless a rank posted first (the store keeps the first); waits at most
    // `bound`.
    void post(const std::string& message, std::chrono::milliseconds bound, bool mismatch = false) noexcept;
    // The failure another rank posted, if one did; waits at most `bound`
    // for the store (a key that is not there is not waited for).
    [[nodiscard]] std::optional<PeerFailure> read(std::chrono::milliseconds bound) const noexcept;

    // "rank 0 failed the communicator: <error>".
    [[nodiscard]] static std::string text(const PeerFailure& failure);

private:
    Store store_;
    std::string key_;
    int rank_;
    int size_;
    bool posted_ = false;  // by this rank; set once, before any destruction
    // A read is in flight (on its own thread, which clears this).
    std::shared_ptr<std::atomic<bool>> reading_ = std::make_shared<std::atomic<bool>>(false);
};

}  // namespace keel::comm
