// The objects behind keel's opaque handles: a keel_device is a Device*, a
// keel_stream a Stream*, a keel_event an Event*, a keel_kernel a
// const DeviceKernel* (kernel_registry.hpp).
#pragma once

#include "device.hpp"
#include "event.hpp"
#include "stream.hpp"

#include <keel/keel.h>
#include <keel/plugin/handles.hpp>
#include <keel/result.hpp>

namespace keel::level_zero {

// These six one-line conversions have the same shape in every plugin on
// purpose: the logic is plugins/support's handle_of/object_from, written
// once; what each plugin adds is only the names bound to its own Device,
// Stream and Event types, which a shared template could not spell shorter
// than these lines.
[[nodiscard]] inline keel_device to_handle(Device* d) noexcept { return plugin::handle_of<keel_device>(d); }
[[nodiscard]] inline keel_stream to_handle(Stream* s) noexcept { return plugin::handle_of<keel_stream>(s); }
[[nodiscard]] inline keel_event to_handle(Event* e) noexcept { return plugin::handle_of<keel_event>(e); }

// The object behind a handle; INVALID_ARGUMENT naming `role` when it is null.
[[nodiscard]] inline Result<Device*> device_from(keel_device h, const char* role = "device") {
    return plugin::object_from<Device>(h, role);
}
[[nodiscard]] inline Result<Stream*> stream_from(keel_stream h, const char* role = "stream") {
    return plugin::object_from<Stream>(h, role);
}
[[nodiscard]] inline Result<Event*> event_from(keel_event h, const char* role = "event") {
    return plugin::object_from<Event>(h, role);
}

}  // namespace keel::level_zero
