#include "host_kernels.hpp"

#include <keel/base/half.hpp>

#include <cstdint>
#include <cstring>
#include <stdint.h>  // before the kernels' header, which includes it inside the namespace below
#include <tuple>
#include <type_traits>
#include <utility>

namespace fake_ze {

namespace cl {

// The work-item being run (one thread runs a launch's work-items in turn).
thread_local std::size_t g_global_id = 0;
thread_local std::size_t g_global_size = 1;

// The OpenCL C built-ins and types the kernel sources use.
inline std::size_t get_global_id(unsigned) { return g_global_id; }
inline std::size_t get_global_size(unsigned) { return g_global_size; }
using ushort = std::uint16_t;
using uint = std::uint32_t;
using std::size_t;
struct half {  // storage only, as in OpenCL C without cl_khr_fp16
    std::uint16_t bits;
};
inline float vload_half(std::size_t i, const half* p) { return keel::half_to_float(p[i].bits); }
inline void vstore_half_rte(float v, std::size_t i, half* p) { p[i].bits = keel::float_to_half(v); }
inline float as_float(uint u) {
    float f;
    std::memcpy(&f, &u, sizeof f);
    return f;
}
inline uint as_uint(float f) {
    uint u;
    std::memcpy(&u, &f, sizeof u);
    return u;
}

#define KEEL_KERNEL
#define KEEL_GLOBAL
#include "core.cl"
#include "fp64.cl"
#undef KEEL_KERNEL
#undef KEEL_GLOBAL

}  // namespace cl

namespace {

// Argument i as the kernel's parameter type (pointers already translated).
template <class P>
P decode(const std::vector<std::byte>& bytes) {
    static_assert(std::is_trivially_copyable_v<P>);
    P value;
    std::memcpy(&value, bytes.data(), sizeof value);
    return value;
}

template <auto Kernel, class... P, std::size_t... I>
void run_items(const std::vector<std::vector<std::byte>>& args, std::uint64_t global_size,
               std::index_sequence<I...>) {
    const std::tuple<P...> values{decode<P>(args[I])...};
    cl::g_global_size = static_cast<std::size_t>(global_size);
    for (std::uint64_t id = 0; id < global_size; ++id) {
        cl::g_global_id = static_cast<std::size_t>(id);
        Kernel(std::get<I>(values)...);
    }
}

template <auto Kernel, class... P>
HostKernel twin_of(const char* name, void (*)(P...)) {
    return HostKernel{name,
                      {HostKernel::Param{static_cast<std::uint32_t>(sizeof(P)), std::is_pointer_v<P>}...},
                      [](const std::vector<std::vector<std::byte>>& args, std::uint64_t global_size) {
                          run_items<Kernel, P...>(args, global_size, std::index_sequence_for<P...>{});
                      }};
}

#define FAKE_ZE_TWIN(kernel) twin_of<&cl::kernel>(#kernel, &cl::kernel)

const HostKernel kTwins[] = {
    FAKE_ZE_TWIN(keel_fill_f32),       FAKE_ZE_TWIN(keel_axpy_f32),
    FAKE_ZE_TWIN(keel_lerp_f32),       FAKE_ZE_TWIN(keel_lerp_grad_f32),
    FAKE_ZE_TWIN(keel_lerp_f16),       FAKE_ZE_TWIN(keel_lerp_grad_f16),
    FAKE_ZE_TWIN(keel_lerp_bf16),      FAKE_ZE_TWIN(keel_lerp_grad_bf16),
    FAKE_ZE_TWIN(keel_lerp_f64),       FAKE_ZE_TWIN(keel_lerp_grad_f64),
};

}  // namespace

const HostKernel* find_host_kernel(std::string_view name) {
    for (const HostKernel& k : kTwins)
        if (name == k.name) return &k;
    return nullptr;
}

}  // namespace fake_ze
