// CPU lerp: out = x + w * (y - x) over a coalesced broadcast layout.
#include "lerp.hpp"
#include "lerp_dispatch.hpp"
#include "lerp_loops.hpp"
#include "lerp_parallel.hpp"

#include <algorithm>

namespace keel::cpu {
namespace {

using namespace plugin;
using namespace lerp;

template <class T, bool XV, bool YV, bool WV>
void lerp_task(const LerpPlan& p, const LerpHostBuffers& b, std::int64_t begin, std::int64_t end) {
    T* out = static_cast<T*>(b.out);
    const T* x = static_cast<const T*>(b.x);
    const T* y = static_cast<const T*>(b.y);
    const T* w = p.w.is_scalar ? nullptr : static_cast<const T*>(b.w);
    const T w_scalar = static_cast<T>(p.w.value);
    for_each_run(p.layout, begin, end, [&](const std::int64_t* off, std::int64_t n) {
        const T* wr = w ? w + off[kLerpW] : nullptr;
        const T wv = (WV || !w) ? w_scalar : wr[0];  // a weight broadcast along the run
        lerp_span<T, XV, YV, WV>(out + off[kLerpOut], x + off[kLerpX], y + off[kLerpY], wr, wv, n);
    });
}

template <class T>
void run_typed(const LerpPlan& p, const LerpHostBuffers& b) {
    const StridedLayout& l = p.layout;
    const std::int64_t n = l.numel;
    if (n == 0) return;
    with_bool(l.inner_stride(kLerpX) != 0, [&](auto xv) {
        with_bool(l.inner_stride(kLerpY) != 0, [&](auto yv) {
            with_bool(!p.w.is_scalar && l.inner_stride(kLerpW) != 0, [&](auto wv) {
                parallel_tasks(ceil_div(n, kTaskElements), [&](std::int64_t t) {
                    lerp_task<T, xv(), yv(), wv()>(p, b, t * kTaskElements,
                                                   std::min(n, (t + 1) * kTaskElements));
                });
            });
        });
    });
}

}  // namespace

Result<void> run_lerp(const LerpPlan& plan, const LerpHostBuffers& buffers) {
    switch (plan.dtype) {
        case KEEL_DTYPE_F32: run_typed<float>(plan, buffers); return ok();
        case KEEL_DTYPE_F64: run_typed<double>(plan, buffers); return ok();
        default:
            return Error(KEEL_STATUS_UNIMPLEMENTED,
                         std::string("[lerp] dtype ") + dtype_name(plan.dtype) +
                             " is not implemented on the CPU device");
    }
}

}  // namespace keel::cpu
