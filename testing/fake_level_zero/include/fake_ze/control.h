/*
 * Test-only control of the fake Level Zero driver (libkeel_fake_ze.so).
 *
 * The driver is loaded by the real Level Zero loader when
 * ZE_ENABLE_ALT_DRIVERS names it. A test that links the same library (or
 * dlopens the same path) reaches this API in the very instance the loader
 * uses: the dynamic linker loads a file once per process.
 *
 * Environment, read at the first zeInit:
 *   FAKE_ZE_DEVICES        comma-separated device types, "gpu" (default),
 *                          "vpu", "cpu": e.g. "gpu,vpu,gpu"
 *   FAKE_ZE_DEVICE_MEMORY  bytes of memory per device (default 2 GiB)
 *   FAKE_ZE_ORDER          "relaxed" (default): a command list runs any
 *                          command whose waits are satisfied, newest first,
 *                          as the specification allows, so that a missing
 *                          dependency shows as wrong results; "in_order":
 *                          strictly in append order
 *   FAKE_ZE_NO_FP64=1      devices do not report ZE_DEVICE_MODULE_FLAG_FP64
 *   FAKE_ZE_NO_IPC=1       zeDriverGetIpcProperties reports no memory or
 *                          event pool IPC (and the IPC calls refuse)
 *
 * Memory IPC: device memory allocated with ze_external_memory_export_desc_t
 * (DMA_BUF) lives in a memfd; zeMemGetIpcHandle puts that descriptor in the
 * first four bytes of the handle and zeMemOpenIpcHandle maps the descriptor
 * found there, so another process that received it (SCM_RIGHTS) and wrote
 * its own number back shares the bytes. Only such memory is exported (a
 * real driver exports any device allocation).
 *
 * Event pool IPC: a pool created with ZE_EVENT_POOL_FLAG_IPC keeps its
 * events' states in a memfd, whose descriptor zeEventPoolGetIpcHandle puts
 * in the first four bytes of the handle; zeEventPoolOpenIpcHandle maps it,
 * so a signal or reset in either process is what the other reads (host
 * waits wake at once, command lists look every 200 us). An event the
 * pool's creator never created reads as signalled, as fresh pool memory
 * does in Intel's driver.
 *
 * Uses of the API that the Level Zero specification forbids (a command
 * list used by two threads at once, an event reset while a command waits
 * for it, memory freed while a command uses it, a copy from memory the
 * device cannot access, ...) print "fake Level Zero driver: ..." and abort
 * the process, as a sanitizer does.
 *
 * Every function may be called from any thread.
 */
#ifndef FAKE_ZE_CONTROL_H
#define FAKE_ZE_CONTROL_H

#include <level_zero/ze_api.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* After `skip` more calls of `function` (its Level Zero name, e.g.
 * "zeMemAllocDevice") that run normally, the next `count` calls return
 * `result` and do nothing else. */
void fake_ze_fail_calls(const char* function, ze_result_t result, uint32_t skip, uint32_t count);

/* Loses device `index` when its command lists are about to start their
 * `after_commands`-th command from now (0: at once). A lost device runs
 * nothing more: queued commands are dropped, waits for events it never
 * signalled and most calls on it return ZE_RESULT_ERROR_DEVICE_LOST. */
void fake_ze_lose_device(uint32_t index, uint64_t after_commands);

/* Moves the device timer so that kernel timestamps (32 bits of a 19.2 MHz
 * counter, as on Intel GPUs) wrap around `ns` nanoseconds from now. */
void fake_ze_wrap_kernel_timestamps_in(uint64_t ns);

/* From now on zexMemGetIpcHandles (Intel's extension, found with
 * zeDriverGetExtensionFunctionAddress) reports every exportable allocation
 * as made of `objects` memory objects, as a multi-tile GPU under implicit
 * scaling may split one (0 or 1: one object, the default). */
void fake_ze_split_ipc_memory(uint32_t objects);

/* Commands every command list has completed since the driver started. */
uint64_t fake_ze_commands_completed(void);

/* Objects alive now: contexts, command lists, event pools, events,
 * modules, kernels and allocations. 0 after a clean shutdown. */
uint64_t fake_ze_live_objects(void);

/* Drops injected failures, makes lost devices healthy again, puts the
 * timer back and allocations in one memory object. */
void fake_ze_reset(void);

#ifdef __cplusplus
}
#endif

#endif /* FAKE_ZE_CONTROL_H */
