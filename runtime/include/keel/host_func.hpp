// HostFunc: a move-only callable that a stream runs on the host when it
// reaches it (std::move_only_function is C++23, so keel has its own).
#pragma once

#include <keel/result.hpp>

#include <concepts>
#include <memory>
#include <type_traits>
#include <utility>

namespace keel {

namespace detail {
struct HostFuncBase {
    HostFuncBase() = default;
    HostFuncBase(const HostFuncBase&) = delete;
    HostFuncBase& operator=(const HostFuncBase&) = delete;
    HostFuncBase(HostFuncBase&&) = delete;
    HostFuncBase& operator=(HostFuncBase&&) = delete;
    virtual ~HostFuncBase() = default;
    virtual void invoke(Status status) = 0;
};

template <class F>
struct HostFuncImpl final : HostFuncBase {
    explicit HostFuncImpl(F f) : fn(std::move(f)) {}
    void invoke(Status status) override {
        if constexpr (std::invocable<F&, Status>)
            fn(status);
        else
            fn();
    }
    F fn;
};
}  // namespace detail

// A callable taking the stream's status (KEEL_STATUS_OK, or the stream's
// error if it failed earlier: the function runs either way, so that what it
// releases is never leaked), or taking nothing.
template <class F>
concept HostCallable = std::move_constructible<std::decay_t<F>> &&
                       (std::invocable<std::decay_t<F>&, Status> ||
                        std::invocable<std::decay_t<F>&>);

// Owns one type-erased HostCallable. Move-only; may be sent across threads.
class HostFunc {
public:
    template <HostCallable F>
        requires(!std::same_as<std::decay_t<F>, HostFunc>)
    HostFunc(F&& f)  // NOLINT: implicit, so any callable can be passed where a HostFunc is taken
        : impl_(std::make_unique<detail::HostFuncImpl<std::decay_t<F>>>(std::forward<F>(f))) {}

    HostFunc(const HostFunc&) = delete;
    HostFunc& operator=(const HostFunc&) = delete;
    HostFunc(HostFunc&&) noexcept = default;
    HostFunc& operator=(HostFunc&&) noexcept = default;
    ~HostFunc() = default;

    // Internal: hands the callable to the stream machinery.
    [[nodiscard]] std::unique_ptr<detail::HostFuncBase> take() && noexcept { return std::move(impl_); }

private:
    std::unique_ptr<detail::HostFuncBase> impl_;
};

}  // namespace keel
