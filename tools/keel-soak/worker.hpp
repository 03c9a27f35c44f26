// One soak thread's work: random framework-like steps on its own stream
// and a shared one, every read-back verified element by element. Used by
// keel-soak's timed runs and by its fault matrix (one named step at a time).
#pragma once

#include <keel/keel.hpp>

#include <atomic>
#include <chrono>
#include <deque>
#include <cstdint>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace soak {

struct Counters {
    std::atomic<std::uint64_t> steps{0};
    std::atomic<std::uint64_t> mismatches{0};
    std::atomic<std::uint64_t> failed_calls{0};
    std::atomic<std::uint64_t> streams_replaced{0};
    std::atomic<std::uint64_t> streams_churned{0};  // side streams closed while buffers of theirs lived on
};

// The kinds of step, as the matrix names them.
enum class Step : unsigned { upload, hand_off, pinned_round_trip, memset, hold_and_move_in };
inline constexpr unsigned kSteps = 5;
[[nodiscard]] const char* step_name(Step step);

// Not thread-safe: one per thread. The shared stream is guarded by the
// mutex passed in, and replaced when a step on it fails.
class Worker {
public:
    Worker(const keel::Device& device, std::optional<keel::Stream>& shared, std::mutex& shared_mu, Counters& counters,
           std::uint64_t seed, bool faults, bool churn = false)
        : device_(device), shared_(shared), shared_mu_(shared_mu), counters_(counters), rng_(seed), faults_(faults),
          churn_(churn) {}

    // Random steps until `until`, with injected faults now and then if asked;
    // with churn, a third of them open a side stream and close it while some
    // of its buffers live on.
    void run(std::chrono::steady_clock::time_point until);
    // One step: false when a call failed (counted; its stream was dropped
    // and is replaced at the next step). A wrong read-back is counted as a
    // mismatch, never returned as success silently.
    bool step(Step step);
    // Drops this worker's own stream (it waits for its work).
    void drop_stream() { stream_.reset(); }
    // The message of the last call that failed.
    [[nodiscard]] const std::string& last_error() const { return last_error_; }

private:
    std::size_t elements() { return 1 + rng_() % (1 << (rng_() % 18)); }
    void fail() { counters_.failed_calls.fetch_add(1, std::memory_order_relaxed); }
    // Whether `r` succeeded; keeps its error's message otherwise.
    template <class R>
    bool ok(const R& r) {
        if (r.ok()) return true;
        last_error_ = r.error().message();
        return false;
    }
    void check(const std::vector<std::uint32_t>& got, const std::vector<std::uint32_t>& want);
    bool read_back(const keel::Stream& s, const keel::Buffer& buf, const std::vector<std::uint32_t>& want);
    bool upload_and_read_back();
    bool memset_and_read_back();
    bool hand_off();
    bool pinned_round_trip();
    bool hold_and_move_in();
    // A side stream per request: a few buffers of sub-segment sizes filled on
    // it, one or two kept past its close; the oldest kept one is read back
    // (on this worker's stream) and dropped. False when a call failed.
    bool churn();
    // Reads the oldest buffer kept from a closed side stream back on this
    // worker's stream, checks it and drops it.
    bool check_oldest_survivor();

    const keel::Device& device_;
    std::optional<keel::Stream>& shared_;  // guarded by shared_mu_
    std::mutex& shared_mu_;
    Counters& counters_;
    std::mt19937_64 rng_;
    bool faults_;
    bool churn_;
    std::optional<keel::Stream> stream_;
    std::string last_error_;
    // Buffers that outlived the side stream they were filled on, with what
    // they must hold.
    struct Survivor {
        keel::Buffer buffer;
        std::vector<std::uint32_t> want;
    };
    std::deque<Survivor> survivors_;
    bool check_and_drop(Survivor survivor);
    // A quarter of them live long (as a model's weights or a cache do): up
    // to 48, each replaced at random, read back when it goes.
    std::vector<Survivor> long_lived_;
};

}  // namespace soak
