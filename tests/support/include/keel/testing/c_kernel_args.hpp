// Kernel arguments for a plugin's C table (kernel_launch), for tests that
// drive a plugin without the runtime.
#pragma once

#include <keel/keel.h>

#include <cstdint>
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
[[nodiscard]] inline keel_kernel_arg f32_arg(float v) {
    keel_kernel_arg a{};
    a.struct_size = KEEL_KERNEL_ARG_STRUCT_SIZE;
    a.kind = KEEL_ARG_SCALAR;
    a.dtype = KEEL_DTYPE_F32;
    a.value.scalar.f32 = v;
    return a;
}
[[nodiscard]] inline keel_kernel_arg f64_arg(double v) {
    keel_kernel_arg a = f32_arg(0.0f);
    a.dtype = KEEL_DTYPE_F64;
    a.value.scalar.f64 = v;
    return a;
}
[[nodiscard]] inline keel_kernel_arg i64_arg(std::int64_t v) {
    keel_kernel_arg a{};
    a.struct_size = KEEL_KERNEL_ARG_STRUCT_SIZE;
    a.kind = KEEL_ARG_SCALAR;
    a.dtype = KEEL_DTYPE_I64;
    a.value.scalar.i64 = v;
    return a;
}
// An int64 array in host memory (which must outlive the launch).
[[nodiscard]] inline keel_kernel_arg ints_arg(const std::int64_t* data, std::uint64_t count) {
    keel_kernel_arg a{};
    a.struct_size = KEEL_KERNEL_ARG_STRUCT_SIZE;
    a.kind = KEEL_ARG_INT_ARRAY;
    a.dtype = KEEL_DTYPE_I64;
    a.value.int_array.data = data;
    a.value.int_array.count = count;
    return a;
}
// The launch of `args` (which must outlive it).
[[nodiscard]] inline keel_launch_args launch_args(const std::vector<keel_kernel_arg>& args) {
    keel_launch_args l{};
    l.struct_size = KEEL_LAUNCH_ARGS_STRUCT_SIZE;
    l.args = args.data();
    l.arg_count = args.size();
    l.arg_struct_size = sizeof(keel_kernel_arg);
    return l;
}

}  // namespace keel::testing
