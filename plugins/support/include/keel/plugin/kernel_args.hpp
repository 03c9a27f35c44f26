// Validated access to a kernel's argument list, shared by every plugin so
// that "wrong type or count" is reported the same way everywhere.
#pragma once

#include <keel/base/dtype.hpp>
#include <keel/keel.h>
#include <keel/result.hpp>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace keel::plugin {

// dtype_name, dtype_size: one spelling for plugins and the runtime side.
using ::keel::dtype_name;
using ::keel::dtype_size;  // 0 for INVALID
// "f32|f16|bf16": a set of dtypes as error messages name it.
[[nodiscard]] std::string dtype_list(std::span<const keel_dtype> dtypes);

// A buffer argument after validation.
struct BufferArg {
    keel_device_addr addr = 0;
    std::uint64_t size = 0;
    keel_dtype dtype = KEEL_DTYPE_INVALID;
    [[nodiscard]] bool absent() const noexcept { return addr == 0 && size == 0; }
};

// A read-only view of one launch's arguments. Every accessor checks kind and
// dtype and fails with INVALID_ARGUMENT naming the kernel, the argument's
// index and its role ("[axpy] argument 2 (y): expected buffer of f32, got scalar i64").
class LaunchArgsView {
public:
    static Result<LaunchArgsView> make(const keel_launch_args* launch, std::string kernel_name);

    [[nodiscard]] std::size_t count() const noexcept { return count_; }
    [[nodiscard]] const keel_kernel_arg& raw(std::size_t i) const noexcept {
        return *keel_kernel_arg_at(launch_, i);
    }
    [[nodiscard]] const std::string& kernel_name() const noexcept { return kernel_; }

    Result<void> expect_count(std::size_t n) const;
    Result<void> expect_count_between(std::size_t lo, std::size_t hi) const;

    // A buffer of one of `dtypes` (any dtype when empty). Absent (0, 0)
    // buffers are accepted only when `optional`.
    Result<BufferArg> buffer(std::size_t i, const char* role,
                             std::span<const keel_dtype> dtypes = {},
                             bool optional = false) const;
    Result<double> scalar_f64(std::size_t i, const char* role) const;  // F32 or F64
    Result<std::int64_t> scalar_i64(std::size_t i, const char* role) const;  // any integer
    Result<std::vector<std::int64_t>> int_array(std::size_t i, const char* role,
                                                std::size_t max_count = 64) const;

    // The kind of argument i (for kernels that accept a scalar or a buffer).
    [[nodiscard]] keel_arg_kind kind(std::size_t i) const noexcept { return raw(i).kind; }

    // An INVALID_ARGUMENT error in this launch's style: "[name] message".
    [[nodiscard]] Error invalid(std::string message) const;

private:
    LaunchArgsView(const keel_launch_args* launch, std::string kernel)
        : launch_(launch), count_(launch->arg_count), kernel_(std::move(kernel)) {}
    Error mismatch(std::size_t i, const char* role, const std::string& expected) const;

    const keel_launch_args* launch_;
    std::size_t count_;
    std::string kernel_;
};

// Ok when `b` is absent or `inside(b.addr, b.size)` (the plugin's check that
// it lies in one allocation of the launch's device) accepts it; otherwise that
// error, prefixed like the others: "[axpy] argument 1 (x): <its message>".
template <class Inside>
[[nodiscard]] Result<void> check_buffer(const LaunchArgsView& args, std::size_t index, const char* role,
                                        const BufferArg& b, Inside&& inside) {
    if (b.absent()) return ok();
    Result<void> r = inside(b.addr, b.size);
    if (r.ok()) return r;
    return Error(r.error().code(), "[" + args.kernel_name() + "] argument " + std::to_string(index) + " (" + role +
                                       "): " + r.error().message());
}

// A buffer argument by index and role, for check_buffers.
struct BufferRole {
    std::size_t index;
    const char* role;
};

// check_buffer for every argument of `roles` that is a buffer (a scalar in
// a buffer-or-scalar slot is skipped; absent buffers pass).
template <class Inside>
[[nodiscard]] Result<void> check_buffers(const LaunchArgsView& args, std::span<const BufferRole> roles,
                                         Inside&& inside) {
    for (const BufferRole& r : roles) {
        if (args.kind(r.index) != KEEL_ARG_BUFFER) continue;
        KEEL_TRY_ASSIGN(const BufferArg b, args.buffer(r.index, r.role, {}, /*optional=*/true));
        KEEL_TRY(check_buffer(args, r.index, r.role, b, inside));
    }
    return ok();
}

}  // namespace keel::plugin
