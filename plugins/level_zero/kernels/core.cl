/* The module every device gets: fill, axpy, and lerp / lerp_grad for f32,
 * f16 and bf16 (computed in f32). Argument layouts: keel_ze_kernels.h. */
#include "layout.clh"

/* fill(out: f32 buffer of n elements, value) */
KEEL_KERNEL void keel_fill_f32(KEEL_GLOBAL float* out, keel_i64 n, float value) {
    for (keel_i64 i = (keel_i64)get_global_id(0); i < n; i += (keel_i64)get_global_size(0)) out[i] = value;
}

/* axpy: y = alpha * x + y over n elements */
KEEL_KERNEL void keel_axpy_f32(float alpha, KEEL_GLOBAL const float* x, KEEL_GLOBAL float* y, keel_i64 n) {
    for (keel_i64 i = (keel_i64)get_global_id(0); i < n; i += (keel_i64)get_global_size(0))
        y[i] = alpha * x[i] + y[i];
}

/* f32 */
#define KEEL_SUFFIX f32
#define KEEL_T float
#define KEEL_ACC float
#define KEEL_LOAD(p, i) ((p)[i])
#define KEEL_STORE(p, i, v) ((p)[i] = (v))
#include "lerp.clh"

/* f16: IEEE half in memory, converted with the OpenCL built-ins (no
 * cl_khr_fp16 arithmetic needed); stores round to nearest even. */
#define KEEL_SUFFIX f16
#define KEEL_T half
#define KEEL_ACC float
#define KEEL_LOAD(p, i) vload_half((size_t)(i), (p))
#define KEEL_STORE(p, i, v) vstore_half_rte((v), (size_t)(i), (p))
#include "lerp.clh"

/* bf16: the high half of an f32; stores round to nearest even, NaN stays NaN. */
static float keel_bf16_load(KEEL_GLOBAL const ushort* p, keel_i64 i) { return as_float((uint)p[i] << 16); }
static void keel_bf16_store(KEEL_GLOBAL ushort* p, keel_i64 i, float v) {
    const uint bits = as_uint(v);
    p[i] = (bits & 0x7fffffffu) > 0x7f800000u ? (ushort)((bits >> 16) | 0x40u)
                                               : (ushort)((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}
#define KEEL_SUFFIX bf16
#define KEEL_T ushort
#define KEEL_ACC float
#define KEEL_LOAD(p, i) keel_bf16_load((p), (i))
#define KEEL_STORE(p, i, v) keel_bf16_store((p), (i), (v))
#include "lerp.clh"
