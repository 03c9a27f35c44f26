// HostFunc: a move-only callable run on a host thread later: by a stream
// when it reaches it (Stream::enqueue_host_func), or once the device is
// done with something (what Stream::hold keeps). std::move_only_function is
// C++23, so keel has its own.
#pragma once

#include <keel/result.hpp>

#include <concepts>
#include <memory>
#include <tuple>
#include <type_traits>
#include <utility>

namespace keel {

namespace detail {
struct Access;

struct HostFuncBase {
    HostFuncBase() = default;
    HostFuncBase(const HostFuncBase&) = delete;
    HostFuncBase& operator=(const HostFuncBase&) = delete;
    HostFuncBase(HostFuncBase&&) = delete;
    HostFuncBase& operator=(HostFuncBase&&) = delete;
    virtual ~HostFuncBase() = default;
    // The callable's result: ok() for one returning nothing.
    virtual Result<void> invoke(Status status) = 0;
    [[nodiscard]] virtual bool fallible() const noexcept = 0;
};

template <class F>
struct HostFuncImpl final : HostFuncBase {
    template <class G>
    explicit HostFuncImpl(G&& g) : fn(std::forward<G>(g)) {}
    Result<void> invoke(Status status) override {
        if constexpr (std::invocable<F&, Status>) {
            if constexpr (std::is_same_v<std::invoke_result_t<F&, Status>, Result<void>>) return fn(status);
            else fn(status);
        } else {
            if constexpr (std::is_same_v<std::invoke_result_t<F&>, Result<void>>) return fn();
            else fn();
        }
        return {};
    }
    [[nodiscard]] bool fallible() const noexcept override {
        if constexpr (std::invocable<F&, Status>)
            return std::is_same_v<std::invoke_result_t<F&, Status>, Result<void>>;
        else
            return std::is_same_v<std::invoke_result_t<F&>, Result<void>>;
    }
    F fn;
};
}  // namespace detail

// A callable taking the stream's status (KEEL_STATUS_OK, or the stream's
// error if it failed earlier: the function runs either way, so that what it
// releases is never leaked), or taking nothing. It returns nothing, or a
// Result<void>: an error then fails the stream at that point where the
// plugin allows it (Stream::enqueue_host_func), and is logged elsewhere.
template <class F>
concept HostCallable = std::move_constructible<std::decay_t<F>> &&
                       (std::invocable<std::decay_t<F>&, Status> ||
                        std::invocable<std::decay_t<F>&>);

// Owns one type-erased HostCallable. Move-only; Send (it may be created on
// one thread and run or destroyed on another, so what it captures must
// allow that too).
class HostFunc {
public:
    HostFunc() = default;  // empty: runs nothing
    template <HostCallable F>
        requires(!std::same_as<std::decay_t<F>, HostFunc>)
    HostFunc(F&& f)  // NOLINT: implicit, so any callable can be passed where a HostFunc is taken
        : impl_(std::make_unique<detail::HostFuncImpl<std::decay_t<F>>>(std::forward<F>(f))) {}

    HostFunc(const HostFunc&) = delete;
    HostFunc& operator=(const HostFunc&) = delete;
    HostFunc(HostFunc&&) noexcept = default;
    HostFunc& operator=(HostFunc&&) noexcept = default;
    ~HostFunc() = default;

    [[nodiscard]] explicit operator bool() const noexcept { return impl_ != nullptr; }
    // Whether the callable returns Result<void>.
    [[nodiscard]] bool fallible() const noexcept { return impl_ && impl_->fallible(); }

    // Runs the callable once, then destroys it (and what it captured); the
    // HostFunc is empty afterwards. Does nothing when empty. A failing
    // callable's error is dropped here: only a stream can take it.
    void run(Status status = KEEL_STATUS_OK) {
        if (!impl_) return;
        std::unique_ptr<detail::HostFuncBase> impl = std::move(impl_);
        (void)impl->invoke(status);
    }

private:
    friend struct detail::Access;
    std::unique_ptr<detail::HostFuncBase> impl_;
};

namespace detail {
// A HostFunc that only owns `objects` (moved in; copyable ones such as a
// std::shared_ptr are copied) and destroys them once it has run: what a
// hold keeps alive.
template <class... T>
[[nodiscard]] HostFunc owning(T&&... objects) {
    return HostFunc([held = std::tuple<std::decay_t<T>...>(std::forward<T>(objects)...)] {});
}
}  // namespace detail

}  // namespace keel
