// What a kernel does to each of its arguments, declared once next to its
// signature (kernel_signatures.hpp) and read by whoever needs it: a checker
// deriving a launch's reads and writes, a scheduler, a graph capture. A
// launch site never restates it.
#pragma once

#include <keel/keel.h>

#include <cstdint>
#include <span>
#include <vector>

namespace keel::plugin {

// How a kernel uses a buffer parameter. `none` also covers scalars, shapes,
// and buffers the kernel accepts but never touches.
enum class Intent : std::uint8_t { none, in, out, inout };

[[nodiscard]] constexpr bool reads(Intent i) noexcept { return i == Intent::in || i == Intent::inout; }
[[nodiscard]] constexpr bool writes(Intent i) noexcept { return i == Intent::out || i == Intent::inout; }
[[nodiscard]] const char* intent_name(Intent i) noexcept;

// One parameter, in launch order.
struct ParamSpec {
    const char* name;
    Intent intent;
};

struct KernelSignature {
    const char* name;
    std::span<const ParamSpec> params;
};

// One buffer a launch touches, as its kernel's signature says.
struct BufferAccess {
    keel_device_addr addr = 0;
    std::uint64_t size = 0;
    Intent intent = Intent::none;
    std::uint32_t index = 0;  // argument index
    const char* role = "";    // the parameter's name
};

// The buffers `launch` touches: every buffer argument (kind BUFFER, not
// absent) whose parameter has an intent. Call it after the launch was
// validated; arguments past the signature are ignored.
[[nodiscard]] std::vector<BufferAccess> buffer_accesses(const KernelSignature& signature,
                                                        const keel_launch_args& launch);

}  // namespace keel::plugin
