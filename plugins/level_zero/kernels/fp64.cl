/* lerp / lerp_grad for f64: a module of its own, built only for devices
 * that report ZE_DEVICE_MODULE_FLAG_FP64 (many Intel GPUs have no fp64). */
#ifdef __OPENCL_C_VERSION__
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif
#include "layout.clh"

#define KEEL_SUFFIX f64
#define KEEL_T double
#define KEEL_ACC double
#define KEEL_LOAD(p, i) ((p)[i])
#define KEEL_STORE(p, i, v) ((p)[i] = (v))
#include "lerp.clh"
