// Builders of kernel launch arguments through the C ABI, shared by
// tests/plugin_cpu and plugins/cpu/bench. Header-only.
#pragma once

#include <keel/keel.h>

#include <cstdint>
#include <vector>

namespace keel::cpu::testing {

inline keel_kernel_arg buffer_arg(keel_device_addr addr, uint64_t size, keel_dtype dtype = KEEL_DTYPE_F32) {
    keel_kernel_arg a{};
    a.struct_size = sizeof a;
    a.kind = KEEL_ARG_BUFFER;
    a.dtype = dtype;
    a.value.buffer.addr = addr;
    a.value.buffer.size = size;
    return a;
}
inline keel_kernel_arg f32_arg(float v) {
    keel_kernel_arg a{};
    a.struct_size = sizeof a;
    a.kind = KEEL_ARG_SCALAR;
    a.dtype = KEEL_DTYPE_F32;
    a.value.scalar.f32 = v;
    return a;
}
inline keel_kernel_arg i64_arg(int64_t v) {
    keel_kernel_arg a{};
    a.struct_size = sizeof a;
    a.kind = KEEL_ARG_SCALAR;
    a.dtype = KEEL_DTYPE_I64;
    a.value.scalar.i64 = v;
    return a;
}
inline keel_launch_args launch_args(const std::vector<keel_kernel_arg>& args) {
    return keel_launch_args{sizeof(keel_launch_args), args.data(), args.size(), sizeof(keel_kernel_arg)};
}

}  // namespace keel::cpu::testing
