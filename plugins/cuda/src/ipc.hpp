// Memory and events shared between processes (keel.h 1.6) through CUDA's
// IPC handles: what the rest of the plugin asks of it.
#pragma once

#include <keel/keel.h>
#include <keel/result.hpp>

namespace keel::cuda {

class Device;

// device_free of imported memory is refused (it is closed with ipc_memory_close).
[[nodiscard]] Result<void> refuse_imported(const Device& device, keel_device_addr addr);

}  // namespace keel::cuda
