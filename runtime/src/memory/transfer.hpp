// Asynchronous copies between host memory and device memory through the
// memory machinery: what Stream::copy does once its arguments are checked,
// and what the memory tests call with a fake device.
//
// Host -> device returns as soon as the copy is enqueued and the caller may
// destroy or change its container at once: the data is first copied into a
// pinned staging block (or, for at most KEEL_INLINE_COPY_MAX bytes, captured
// by the plugin's memcpy_h2d_inline), which goes back to the pool when the
// device has read it. Large copies are split into chunks so that filling
// one chunk overlaps with the device copying the previous one.
//
// Device -> host is not staged here: the plugin's memcpy_d2h writes the
// destination when the copy executes (staging it itself if its device
// cannot reach pageable memory), and a pooled event recorded after it is
// what HostCopy waits on.
#pragma once

#include <keel/host_copy.hpp>
#include <keel/host_func.hpp>

#include "memory/memory_core.hpp"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>

namespace keel::memory {

// Enqueues a copy of `src` to device memory [dst, dst + src.size()) on
// `stream`. `src` may be destroyed as soon as this returns.
[[nodiscard]] Result<void> copy_to_device(MemoryCore& core, keel_stream stream, keel_device_addr dst,
                                          std::span<const std::byte> src);

// Enqueues a copy of `src` to [dst, dst + src.size()) straight from memory
// that `keep_alive` owns, then holds `keep_alive` on `stream` until the copy
// ran: no staging copy. (Tiny copies still take the inline path.)
[[nodiscard]] Result<void> copy_to_device_owned(MemoryCore& core, keel_stream stream,
                                                keel_device_addr dst, std::span<const std::byte> src,
                                                HostFunc keep_alive);

// Runs `enqueue`, a memcpy_h2d or memcpy_d2h with pageable host memory. A
// plugin that stages such memory bounds its pinned blocks, and refuses with
// OUT_OF_MEMORY (enqueueing nothing) while copies in flight hold them all.
// Those of `stream` give theirs back once they ran: this waits for the
// stream and tries once more, so that a host running ahead is slowed down
// instead of failed (the same back-pressure as the runtime's own bounds).
// The second refusal (blocks held by other streams) is returned.
[[nodiscard]] Result<void> enqueue_pageable_copy(MemoryCore& core, keel_stream stream,
                                                 const std::function<Result<void>()>& enqueue);

// Enqueues a copy of device memory [src, src + dst.size()) into `dst` on
// `stream`, straight into `dst`. `dst` must stay valid until wait() returns
// (or the HostCopy is dropped, which waits).
[[nodiscard]] Result<HostCopy> copy_from_device(const std::shared_ptr<MemoryCore>& core,
                                                keel_stream stream, std::span<std::byte> dst,
                                                keel_device_addr src);

}  // namespace keel::memory
