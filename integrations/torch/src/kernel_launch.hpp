// Launching a keel kernel for an aten kernel, or learning that keel has
// none for this case (so that the caller falls back to the CPU).
#pragma once

#include "errors.hpp"
#include "tensors.hpp"

#include <string>

namespace keel_torch {

// Launches `name` on the current stream of `on`'s device. False when the
// device serves no such kernel, or refuses this case as UNIMPLEMENTED (the
// CPU's f16 lerp) before enqueuing anything; any other error is thrown.
inline bool launch_if_served(const at::Tensor& on, const std::string& name, const keel::KernelArgs& args) {
    const TorchDevice& device = keel_device_of(on);
    keel::Result<keel::Kernel> kernel = device.kernel(name);
    if (!kernel.ok()) {
        const keel::Status code = kernel.error().code();
        if (code == KEEL_STATUS_NOT_FOUND || code == KEEL_STATUS_UNIMPLEMENTED) return false;
        throw_error(kernel.error());
    }
    keel::Result<void> launched = unwrap(device.current_stream())->launch(kernel.value(), args);
    if (!launched.ok()) {
        if (launched.error().code() == KEEL_STATUS_UNIMPLEMENTED) return false;
        throw_error(launched.error());
    }
    return true;
}

}  // namespace keel_torch
