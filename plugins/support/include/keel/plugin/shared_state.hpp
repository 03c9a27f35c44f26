// The state a plugin holds between keel_plugin_init and plugin_shutdown,
// counted: a library loaded twice through the same path is one instance and
// gets init twice, and init may follow a shutdown. Like PluginGlobal, which
// holds it, it is never destroyed by exit-time destructors.
#pragma once

#include <keel/plugin/plugin_global.hpp>
#include <keel/result.hpp>

#include <memory>
#include <mutex>
#include <type_traits>

namespace keel::plugin {

// acquire/release are thread-safe with each other; get() is lock-free and
// valid between an acquire and the last release, which the ABI guarantees
// for every entry.
template <class State>
class SharedState {
public:
    // The first call makes the state with `make()` (returning
    // Result<std::unique_ptr<State>>); later calls count.
    template <class Make>
    [[nodiscard]] Result<void> acquire(Make&& make) {
        std::lock_guard lock(mutex_);
        if (references_ > 0) {
            ++references_;
            return ok();
        }
        KEEL_TRY_ASSIGN(std::unique_ptr<State> made, make());
        state_.adopt(std::move(made));
        references_ = 1;
        return ok();
    }

    // Drops one reference; the last calls `last(state)`, destroys the state
    // and returns true.
    template <class Last>
    bool release(Last&& last) noexcept {
        std::lock_guard lock(mutex_);
        if (references_ == 0 || --references_ > 0) return false;
        last(*state_);
        state_.reset();
        return true;
    }

    [[nodiscard]] State& get() const noexcept { return *state_; }

private:
    std::mutex mutex_;
    PluginGlobal<State> state_;  // written under mutex_, read by entries in between
    int references_ = 0;            // guarded by mutex_
};

static_assert(std::is_trivially_destructible_v<SharedState<int>>,
              "a plugin's state must survive exit-time destructors");

}  // namespace keel::plugin
