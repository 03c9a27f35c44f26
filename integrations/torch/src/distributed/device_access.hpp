// What the torch.distributed backend (the Python module keel_torch._c10d,
// a separate library so that keel_torch alone never loads keel::comm and
// Gloo) needs of libkeel_torch.so: the process's one set of keel devices and
// the streams PyTorch names. Exported from libkeel_torch.so; every call
// throws c10::Error (never aborts) for an index or stream that does not exist.
#pragma once

#include <c10/core/Storage.h>
#include <c10/core/Stream.h>
#include <keel/keel.hpp>

#define KEEL_TORCH_EXPORT __attribute__((visibility("default")))

namespace keel_torch::shared {

// The keel device behind privateuseone:index (the process-wide one).
[[nodiscard]] KEEL_TORCH_EXPORT const keel::Device& keel_device(c10::DeviceIndex index);
// The keel stream a privateuseone c10::Stream names; it lives as long as the process.
[[nodiscard]] KEEL_TORCH_EXPORT const keel::Stream& keel_stream(const c10::Stream& stream);
// Throws c10::Error when the storage's data is unknown (keel_torch.recover()
// after a fault: see torch_device.hpp's check_data_known).
KEEL_TORCH_EXPORT void check_data_known(const c10::Storage& storage);
// Holds privateuseone:index against keel_torch.recover() for its scope (an
// operation's checks and enqueues; see DeviceUse in devices.hpp). Ends on
// the thread that made it; neither copyable nor movable.
class KEEL_TORCH_EXPORT DeviceHold {
public:
    explicit DeviceHold(c10::DeviceIndex index);
    DeviceHold(const DeviceHold&) = delete;
    DeviceHold& operator=(const DeviceHold&) = delete;
    ~DeviceHold();

private:
    void* use_;  // a DeviceUse, owned
};
// A stream of privateuseone:index made for the caller (for communication),
// as PyTorch names it.
[[nodiscard]] KEEL_TORCH_EXPORT c10::Stream new_stream(c10::DeviceIndex index);

}  // namespace keel_torch::shared
