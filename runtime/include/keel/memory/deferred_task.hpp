// A move-only `void()` callable (std::function needs copyable targets; a held
// object usually is not copyable).
#pragma once

#include <memory>
#include <tuple>
#include <type_traits>
#include <utility>

namespace keel::memory {

// Send: may be created on one thread and run or destroyed on another; what it
// captures must allow that too.
class DeferredTask {
public:
    DeferredTask() = default;
    template <class F, class = std::enable_if_t<!std::is_same_v<std::decay_t<F>, DeferredTask>>>
    explicit DeferredTask(F&& f) : impl_(std::make_unique<Impl<std::decay_t<F>>>(std::forward<F>(f))) {}

    DeferredTask(const DeferredTask&) = delete;
    DeferredTask& operator=(const DeferredTask&) = delete;
    DeferredTask(DeferredTask&&) noexcept = default;
    DeferredTask& operator=(DeferredTask&&) noexcept = default;
    ~DeferredTask() = default;

    [[nodiscard]] explicit operator bool() const noexcept { return impl_ != nullptr; }

    // Runs the callable once, then destroys it (and what it captured).
    void run() {
        if (!impl_) return;
        std::unique_ptr<Base> impl = std::move(impl_);
        impl->call();
    }

private:
    struct Base {
        Base() = default;
        Base(const Base&) = delete;
        Base& operator=(const Base&) = delete;
        Base(Base&&) = delete;
        Base& operator=(Base&&) = delete;
        virtual ~Base() = default;
        virtual void call() = 0;
    };
    template <class F>
    struct Impl final : Base {
        explicit Impl(F&& f) : fn(std::move(f)) {}
        explicit Impl(const F& f) : fn(f) {}
        void call() override { fn(); }
        F fn;
    };
    std::unique_ptr<Base> impl_;
};

// A task that only owns `objects` (moved in; copyable ones such as a
// std::shared_ptr are copied) and destroys them once it has run: what a hold
// keeps alive.
template <class... T>
[[nodiscard]] DeferredTask owning(T&&... objects) {
    return DeferredTask([held = std::tuple<std::decay_t<T>...>(std::forward<T>(objects)...)] {});
}

}  // namespace keel::memory
