// Device memory shared between processes: what zeMemAllocDevice needs of it.
#pragma once

#include "fake.hpp"

namespace fake_ze {

// Whether a zeMemAllocDevice descriptor's pNext chain asks for memory that
// can be exported as a dma-buf (ze_external_memory_export_desc_t).
[[nodiscard]] bool asks_for_export(const void* next) noexcept;

// Backs `a` (size set) with a fresh memfd, mapped shared; false when the
// host is out of memory or descriptors.
[[nodiscard]] bool back_with_memfd(Allocation& a);

}  // namespace fake_ze
