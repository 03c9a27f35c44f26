// Gate: holds a stream at a point until open(), with a host function that
// waits: the tool that proves work is asynchronous and that keeps work
// unfinished while a test looks. A gate never hangs a test: a waiter gives
// up after its patience (default 10 s, or KEEL_TEST_GATE_PATIENCE_MS, which
// runs that expect failures use to fail fast) and the gate then fails the
// test when it is destroyed. That also catches a plugin that ran the host
// function inline at enqueue (the enqueue itself waits out the patience).
//
// Declare a gate after the streams it holds (and what their work uses):
// its destructor opens it before they go. Header-only; GoogleTest suites.
#pragma once

#include <keel/environment.hpp>
#include <keel/keel.h>
#include <keel/testing/knob.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <future>
#include <memory>

namespace keel::testing {

class Gate {
public:
    explicit Gate(std::chrono::milliseconds patience = default_patience())
        : state_(std::make_shared<State>()) {
        state_->patience = patience;
        state_->released = state_->release.get_future().share();
    }
    Gate(const Gate&) = delete;
    Gate& operator=(const Gate&) = delete;
    Gate(Gate&&) = delete;
    Gate& operator=(Gate&&) = delete;
    ~Gate() {
        open();
        if (timed_out())
            ADD_FAILURE() << "a stream waited on a gate for its whole patience (the test never opened it, "
                             "or the plugin ran the host function inline, at enqueue)";
    }

    // Holds `stream` (a keel::Stream, or anything with enqueue_host_func)
    // at this point until open().
    template <class Stream>
    [[nodiscard]] auto hold(const Stream& stream) {
        return stream.enqueue_host_func([state = state_] { wait(*state); });
    }
    // The same through a plugin's C table.
    [[nodiscard]] keel_error* hold(const keel_plugin_api& api, keel_stream stream) {
        auto* owned = new std::shared_ptr<State>(state_);
        keel_error* e = api.stream_enqueue_host_func(stream, &wait_fn, owned);
        if (e != nullptr) delete owned;  // not enqueued: never called
        return e;
    }

    void open() {
        if (!state_->opened.exchange(true)) state_->release.set_value();
    }
    // Whether a held stream reached the gate.
    [[nodiscard]] bool entered() const { return state_->entered.load(); }
    // Whether a waiter gave up (the test fails when the gate goes).
    [[nodiscard]] bool timed_out() const { return state_->timed_out.load(); }

    static std::chrono::milliseconds default_patience() {
        return std::chrono::milliseconds(
            knob(env::integer(env::Var::test_gate_patience_ms, 1, std::int64_t{1} << 40), 10000));
    }

private:
    struct State {
        std::chrono::milliseconds patience{};
        std::promise<void> release;
        std::shared_future<void> released;
        std::atomic<bool> opened{false};
        std::atomic<bool> entered{false};
        std::atomic<bool> timed_out{false};
    };
    static void wait(State& s) {
        s.entered.store(true);
        if (s.released.wait_for(s.patience) == std::future_status::timeout) s.timed_out.store(true);
    }
    static void wait_fn(void* user_data, keel_status) {
        std::unique_ptr<std::shared_ptr<State>> state(static_cast<std::shared_ptr<State>*>(user_data));
        wait(**state);
    }

    std::shared_ptr<State> state_;
};

}  // namespace keel::testing
