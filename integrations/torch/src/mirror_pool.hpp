// Host memory for the CPU fallback's mirrors of keel storages, kept between
// calls: a fresh buffer per call costs page faults (and, above malloc's
// mmap threshold, an mmap and munmap) that cost more than the copy into it.
#pragma once

#include <c10/core/Storage.h>

#include <cstddef>

namespace keel_torch {

// A resizable CPU storage of `bytes` whose memory comes from the pool and
// returns to it when the storage's last reference goes (on any thread).
// The pool keeps at most a bounded number of bytes; larger or surplus
// buffers are freed.
[[nodiscard]] c10::Storage mirror_storage(std::size_t bytes);

}  // namespace keel_torch
