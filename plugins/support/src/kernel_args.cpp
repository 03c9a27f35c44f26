#include <keel/plugin/kernel_args.hpp>

#include <algorithm>

namespace keel::plugin {



namespace {

const char* kind_name(keel_arg_kind kind) noexcept {
    switch (kind) {
        case KEEL_ARG_BUFFER: return "buffer";
        case KEEL_ARG_SCALAR: return "scalar";
        case KEEL_ARG_INT_ARRAY: return "int array";
        default: return "unknown kind";
    }
}

bool is_integer(keel_dtype d) noexcept {
    return d == KEEL_DTYPE_I8 || d == KEEL_DTYPE_I32 || d == KEEL_DTYPE_I64 ||
           d == KEEL_DTYPE_U8 || d == KEEL_DTYPE_U32 || d == KEEL_DTYPE_U64;
}

}  // namespace

std::string dtype_list(std::span<const keel_dtype> dtypes) {
    std::string out;
    for (keel_dtype d : dtypes) {
        if (!out.empty()) out += "|";
        out += dtype_name(d);
    }
    return out;
}

Result<LaunchArgsView> LaunchArgsView::make(const keel_launch_args* launch, std::string name) {
    if (launch == nullptr)
        return Error(KEEL_STATUS_INVALID_ARGUMENT, "[" + name + "] launch arguments are null");
    if (launch->struct_size < KEEL_LAUNCH_ARGS_STRUCT_SIZE)
        return Error(KEEL_STATUS_INVALID_ARGUMENT,
                     "[" + name + "] keel_launch_args.struct_size " +
                         std::to_string(launch->struct_size) + " is smaller than " +
                         std::to_string(KEEL_LAUNCH_ARGS_STRUCT_SIZE));
    if (launch->arg_count > 0 && launch->args == nullptr)
        return Error(KEEL_STATUS_INVALID_ARGUMENT, "[" + name + "] argument array is null");
    if (launch->arg_count > 0 && launch->arg_struct_size < KEEL_KERNEL_ARG_STRUCT_SIZE)
        return Error(KEEL_STATUS_INVALID_ARGUMENT,
                     "[" + name + "] arg_struct_size " + std::to_string(launch->arg_struct_size) +
                         " is smaller than keel_kernel_arg (" +
                         std::to_string(KEEL_KERNEL_ARG_STRUCT_SIZE) + ")");
    return LaunchArgsView(launch, std::move(name));
}

Error LaunchArgsView::invalid(std::string message) const {
    return Error(KEEL_STATUS_INVALID_ARGUMENT, "[" + kernel_ + "] " + message);
}

Error LaunchArgsView::mismatch(std::size_t i, const char* role, const std::string& expected) const {
    const keel_kernel_arg& a = raw(i);
    return invalid("argument " + std::to_string(i) + " (" + role + "): expected " + expected +
                   ", got " + kind_name(a.kind) + " " + dtype_name(a.dtype));
}

Result<void> LaunchArgsView::expect_count(std::size_t n) const {
    return expect_count_between(n, n);
}

Result<void> LaunchArgsView::expect_count_between(std::size_t lo, std::size_t hi) const {
    if (count_ >= lo && count_ <= hi) return ok();
    std::string want = lo == hi ? std::to_string(lo)
                                : std::to_string(lo) + " to " + std::to_string(hi);
    return invalid("expected " + want + " arguments, got " + std::to_string(count_));
}

Result<BufferArg> LaunchArgsView::buffer(std::size_t i, const char* role,
                                         std::span<const keel_dtype> dtypes,
                                         bool optional) const {
    if (i >= count_) return invalid(std::string("missing argument ") + std::to_string(i) + " (" + role + ")");
    const keel_kernel_arg& a = raw(i);
    if (a.kind != KEEL_ARG_BUFFER ||
        (!dtypes.empty() && std::find(dtypes.begin(), dtypes.end(), a.dtype) == dtypes.end()))
        return mismatch(i, role, "buffer" + (dtypes.empty() ? std::string() : " of " + dtype_list(dtypes)));
    BufferArg b{a.value.buffer.addr, a.value.buffer.size, a.dtype};
    if (b.absent()) {
        if (optional) return b;
        return invalid("argument " + std::to_string(i) + " (" + role + ") is an absent buffer");
    }
    if (b.addr == 0) return invalid("argument " + std::to_string(i) + " (" + role + ") has a null address");
    std::size_t es = dtype_size(b.dtype);
    if (es != 0 && b.size % es != 0)
        return invalid("argument " + std::to_string(i) + " (" + role + "): size " +
                       std::to_string(b.size) + " is not a multiple of " + dtype_name(b.dtype));
    return b;
}

Result<double> LaunchArgsView::scalar_f64(std::size_t i, const char* role) const {
    if (i >= count_) return invalid(std::string("missing argument ") + std::to_string(i) + " (" + role + ")");
    const keel_kernel_arg& a = raw(i);
    if (a.kind != KEEL_ARG_SCALAR) return mismatch(i, role, "scalar f32|f64");
    if (a.dtype == KEEL_DTYPE_F32) return static_cast<double>(a.value.scalar.f32);
    if (a.dtype == KEEL_DTYPE_F64) return a.value.scalar.f64;
    return mismatch(i, role, "scalar f32|f64");
}

Result<std::int64_t> LaunchArgsView::scalar_i64(std::size_t i, const char* role) const {
    if (i >= count_) return invalid(std::string("missing argument ") + std::to_string(i) + " (" + role + ")");
    const keel_kernel_arg& a = raw(i);
    if (a.kind != KEEL_ARG_SCALAR || !is_integer(a.dtype)) return mismatch(i, role, "integer scalar");
    return a.value.scalar.i64;
}

Result<std::vector<std::int64_t>> LaunchArgsView::int_array(std::size_t i, const char* role,
                                                            std::size_t max_count) const {
    if (i >= count_) return invalid(std::string("missing argument ") + std::to_string(i) + " (" + role + ")");
    const keel_kernel_arg& a = raw(i);
    if (a.kind != KEEL_ARG_INT_ARRAY) return mismatch(i, role, "int array");
    if (a.value.int_array.count > max_count)
        return invalid("argument " + std::to_string(i) + " (" + role + ") has " +
                       std::to_string(a.value.int_array.count) + " entries, at most " +
                       std::to_string(max_count) + " allowed");
    if (a.value.int_array.count > 0 && a.value.int_array.data == nullptr)
        return invalid("argument " + std::to_string(i) + " (" + role + ") has null data");
    return std::vector<std::int64_t>(a.value.int_array.data,
                                     a.value.int_array.data + a.value.int_array.count);
}

}  // namespace keel::plugin
