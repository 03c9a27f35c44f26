// Kernel launch arguments for tests that call a plugin's C table directly.
//
// LaunchArgs owns everything a keel_launch_args points at (the argument
// array and the int arrays), so the pointer it hands out cannot outlive
// them: get() is for a named LaunchArgs only (on a temporary, also at the
// end of a chain of builder calls, it does not compile), and the object is
// move-only (a copy's int arrays would point into the original).
#pragma once

#include <keel/keel.h>

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <utility>
#include <vector>

namespace keel::testing {

[[nodiscard]] inline keel_kernel_arg buffer_arg(keel_device_addr addr, std::uint64_t size,
                                                keel_dtype dtype = KEEL_DTYPE_F32) {
    keel_kernel_arg a{};
    a.struct_size = KEEL_KERNEL_ARG_STRUCT_SIZE;
    a.kind = KEEL_ARG_BUFFER;
    a.dtype = dtype;
    a.value.buffer.addr = addr;
    a.value.buffer.size = size;
    return a;
}

// A scalar argument of `dtype`; `set` writes the value into its member.
template <class Set>
[[nodiscard]] keel_kernel_arg scalar_arg(keel_dtype dtype, Set&& set) {
    keel_kernel_arg a{};
    a.struct_size = KEEL_KERNEL_ARG_STRUCT_SIZE;
    a.kind = KEEL_ARG_SCALAR;
    a.dtype = dtype;
    set(a.value.scalar);
    return a;
}
[[nodiscard]] inline keel_kernel_arg f32_arg(float value) {
    return scalar_arg(KEEL_DTYPE_F32, [&](auto& s) { s.f32 = value; });
}
[[nodiscard]] inline keel_kernel_arg f64_arg(double value) {
    return scalar_arg(KEEL_DTYPE_F64, [&](auto& s) { s.f64 = value; });
}
[[nodiscard]] inline keel_kernel_arg i64_arg(std::int64_t value) {
    return scalar_arg(KEEL_DTYPE_I64, [&](auto& s) { s.i64 = value; });
}

// Not thread-safe while it is built; once built, get() may be called from
// any thread.
class LaunchArgs {
public:
    LaunchArgs() { refresh(); }
    // Scalars and buffers given at once: LaunchArgs l({buffer_arg(...), f32_arg(1)}).
    explicit LaunchArgs(std::vector<keel_kernel_arg> args) : args_(std::move(args)) { refresh(); }
    LaunchArgs(const LaunchArgs&) = delete;
    LaunchArgs& operator=(const LaunchArgs&) = delete;
    LaunchArgs(LaunchArgs&& other) noexcept
        : args_(std::move(other.args_)), arrays_(std::move(other.arrays_)) {
        refresh();
        other.args_.clear();
        other.refresh();
    }
    LaunchArgs& operator=(LaunchArgs&& other) noexcept {
        args_ = std::move(other.args_);
        arrays_ = std::move(other.arrays_);
        refresh();
        other.args_.clear();
        other.refresh();
        return *this;
    }
    ~LaunchArgs() = default;

    LaunchArgs& add(const keel_kernel_arg& a) & {
        args_.push_back(a);
        refresh();
        return *this;
    }
    LaunchArgs& buffer(keel_device_addr addr, std::uint64_t size, keel_dtype dtype) & {
        return add(buffer_arg(addr, size, dtype));
    }
    // An absent optional buffer.
    LaunchArgs& absent(keel_dtype dtype) & { return buffer(0, 0, dtype); }
    LaunchArgs& scalar_f32(float v) & { return add(f32_arg(v)); }
    LaunchArgs& scalar_f64(double v) & { return add(f64_arg(v)); }
    // An int64 array (a shape), copied in.
    LaunchArgs& ints(std::span<const std::int64_t> values) & {
        arrays_.push_back(std::make_unique<std::vector<std::int64_t>>(values.begin(), values.end()));
        keel_kernel_arg a{};
        a.struct_size = KEEL_KERNEL_ARG_STRUCT_SIZE;
        a.kind = KEEL_ARG_INT_ARRAY;
        a.dtype = KEEL_DTYPE_I64;
        a.value.int_array.data = arrays_.back()->data();
        a.value.int_array.count = arrays_.back()->size();
        return add(a);
    }
    LaunchArgs& ints(std::initializer_list<std::int64_t> values) & {
        return ints(std::span<const std::int64_t>(values.begin(), values.size()));
    }
    LaunchArgs& ints(const std::vector<std::int64_t>& values) & { return ints(std::span<const std::int64_t>(values)); }

    // The same on a temporary keep it one, so that get() still refuses it.
    LaunchArgs&& add(const keel_kernel_arg& a) && { return std::move(add(a)); }
    LaunchArgs&& buffer(keel_device_addr addr, std::uint64_t size, keel_dtype dtype) && {
        return std::move(buffer(addr, size, dtype));
    }
    LaunchArgs&& absent(keel_dtype dtype) && { return std::move(absent(dtype)); }
    LaunchArgs&& scalar_f32(float v) && { return std::move(scalar_f32(v)); }
    LaunchArgs&& scalar_f64(double v) && { return std::move(scalar_f64(v)); }
    LaunchArgs&& ints(std::span<const std::int64_t> values) && { return std::move(ints(values)); }
    LaunchArgs&& ints(std::initializer_list<std::int64_t> values) && { return std::move(ints(values)); }
    LaunchArgs&& ints(const std::vector<std::int64_t>& values) && { return std::move(ints(values)); }

    // Argument i, to break one field of a valid list.
    [[nodiscard]] keel_kernel_arg& at(std::size_t i) { return args_.at(i); }
    [[nodiscard]] std::size_t size() const noexcept { return args_.size(); }

    // The list as kernel_launch takes it; valid while this object lives
    // and is not changed.
    [[nodiscard]] const keel_launch_args* get() const& { return &launch_; }
    // A temporary's list would dangle at the end of the statement.
    const keel_launch_args* get() const&& = delete;

private:
    void refresh() noexcept {
        launch_ = keel_launch_args{KEEL_LAUNCH_ARGS_STRUCT_SIZE, args_.data(), args_.size(), sizeof(keel_kernel_arg)};
    }

    std::vector<keel_kernel_arg> args_;
    std::vector<std::unique_ptr<std::vector<std::int64_t>>> arrays_;  // stable addresses
    keel_launch_args launch_{};
};

}  // namespace keel::testing
