// keel's opaque handles (keel_device, keel_stream, keel_event, ...) as a
// plugin's own objects: the handle is the object's address. The conversion
// back only refuses null: the ABI leaves a foreign or dangling handle
// undefined, and a plugin that can tell checks more itself.
#pragma once

#include <keel/keel.h>
#include <keel/result.hpp>

#include <string>

namespace keel::plugin {

template <class Handle, class Object>
[[nodiscard]] Handle handle_of(Object* object) noexcept {
    return reinterpret_cast<Handle>(object);
}

// The object behind `handle`; INVALID_ARGUMENT naming `role` when it is null.
template <class Object, class Handle>
[[nodiscard]] Result<Object*> object_from(Handle handle, const char* role) {
    if (handle == nullptr) return Error(KEEL_STATUS_INVALID_ARGUMENT, std::string(role) + " is null");
    return reinterpret_cast<Object*>(handle);
}

}  // namespace keel::plugin
