/* The argument layouts of the Level Zero plugin's kernels: one contract for
 * the OpenCL C sources in this folder (compiled to SPIR-V at build time), the
 * plugin, which sets the arguments (src/kernels/), and the test driver under
 * testing/fake_level_zero, which runs these very sources compiled as C++.
 *
 * Every field is 64-bit so the layout is identical in OpenCL C and C++
 * (no padding anywhere). Operand orders follow plugins/support
 * (keel::plugin::LerpOperand, keel::plugin::LerpGradOperand). */
#ifndef KEEL_ZE_KERNELS_H
#define KEEL_ZE_KERNELS_H

#ifdef __OPENCL_C_VERSION__
typedef long keel_i64;
#define KEEL_KERNEL kernel
#define KEEL_GLOBAL global
#else
#include <stdint.h>
typedef int64_t keel_i64;
/* The host build (testing/fake_level_zero) defines KEEL_KERNEL, KEEL_GLOBAL and
 * the OpenCL built-ins the sources use before including them. */
#endif

#define KEEL_ZE_MAX_RANK 16

/* lerp's iteration space; operands out, x, y, w. */
typedef struct KeelZeLerpLayout {
    keel_i64 rank;
    keel_i64 numel;
    keel_i64 size[KEEL_ZE_MAX_RANK];
    keel_i64 stride[4][KEEL_ZE_MAX_RANK];
} KeelZeLerpLayout;

/* One part of a lerp_grad pass's iteration space; operands dout, w, target. */
typedef struct KeelZeGradLayout {
    keel_i64 rank;
    keel_i64 numel;
    keel_i64 size[KEEL_ZE_MAX_RANK];
    keel_i64 stride[3][KEEL_ZE_MAX_RANK];
} KeelZeGradLayout;

/* A lerp_grad pass (keel::plugin::ReductionLayout when it reduces; for an
 * elementwise pass `outer` is the whole space, `reduce` is empty (rank 0,
 * numel 1) and inner is 1). Element (o, r, i) of operand op lives at
 * outer(o) + reduce(r) + i * inner_stride[op]. */
typedef struct KeelZeGradPass {
    KeelZeGradLayout outer;
    KeelZeGradLayout reduce;
    keel_i64 inner;
    keel_i64 inner_stride[3];
    keel_i64 inner_reduced; /* 1: row reduction (innermost dim summed) */
} KeelZeGradPass;

/* lerp_grad output modes, bits of its `modes` argument: dx in bits 0-1, dy
 * in bits 2-3, and whether the weight is the scalar argument. */
#define KEEL_ZE_GRAD_ABSENT 0
#define KEEL_ZE_GRAD_ELEMENTWISE 1
#define KEEL_ZE_GRAD_REDUCED 2
#define KEEL_ZE_GRAD_DX_SHIFT 0
#define KEEL_ZE_GRAD_DY_SHIFT 2
#define KEEL_ZE_GRAD_W_SCALAR 16

#endif /* KEEL_ZE_KERNELS_H */
