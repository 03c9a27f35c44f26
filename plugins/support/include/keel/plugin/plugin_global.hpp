// The state a plugin keeps between keel_plugin_init and plugin_shutdown.
//
// It is owned by that pair of calls and never by an exit-time destructor:
// hosts keep keel objects in globals (frameworks do), so the runtime may
// free memory and destroy streams through the plugin while the process
// exits, after the plugin's own static destructors have run. A
// std::unique_ptr at namespace scope would already have destroyed the state
// by then; this holder is trivially destructible, so exit leaves it alone.
//
// Not thread-safe to emplace or reset: keel_plugin_init and plugin_shutdown
// are single-threaded by contract. Reading it from entries is.
#pragma once

#include <memory>
#include <type_traits>
#include <utility>

namespace keel::plugin {

template <class T>
class PluginGlobal {
public:
    constexpr PluginGlobal() noexcept = default;
    PluginGlobal(const PluginGlobal&) = delete;
    PluginGlobal& operator=(const PluginGlobal&) = delete;

    template <class... Args>
    T& emplace(Args&&... args) {
        reset();
        value_ = std::make_unique<T>(std::forward<Args>(args)...).release();
        return *value_;
    }
    // Destroys the state (plugin_shutdown).
    void reset() noexcept { std::unique_ptr<T> owned(std::exchange(value_, nullptr)); }

    [[nodiscard]] explicit operator bool() const noexcept { return value_ != nullptr; }
    [[nodiscard]] T* get() const noexcept { return value_; }
    [[nodiscard]] T& operator*() const noexcept { return *value_; }
    [[nodiscard]] T* operator->() const noexcept { return value_; }

private:
    T* value_ = nullptr;
};

static_assert(std::is_trivially_destructible_v<PluginGlobal<int>>);

}  // namespace keel::plugin
