// libkeel_torch.so's side of device_access.hpp: thin exported forwards to
// the internals the allocator and the device guard use.
#include "device_access.hpp"

#include "../errors.hpp"
#include "../torch_device.hpp"

namespace keel_torch::shared {

const keel::Device& keel_device(c10::DeviceIndex index) { return torch_device(index).device(); }

const keel::Stream& keel_stream(const c10::Stream& stream) { return keel_torch::keel_stream(stream); }

void check_data_known(const c10::Storage& storage) { keel_torch::check_data_known(storage); }

DeviceHold::DeviceHold(c10::DeviceIndex index) : use_(new DeviceUse(torch_device(index))) {}

DeviceHold::~DeviceHold() { delete static_cast<DeviceUse*>(use_); }

c10::Stream new_stream(c10::DeviceIndex index) {
    const TorchDevice& device = torch_device(index);
    const std::int64_t id = unwrap(device.dedicated_stream());
    return c10::Stream(c10::Stream::UNSAFE, c10::Device(c10::DeviceType::PrivateUse1, device.index()), id);
}

}  // namespace keel_torch::shared
