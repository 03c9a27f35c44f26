// Copies between the memory of two CPU devices (keel.h 1.6, "several
// devices"): every pair of the plugin's devices copies directly, since all
// of them live in this process; each address is still checked to be memory
// of the device it is given with, so a mixed-up pair is an error, not a
// copy of the wrong device's bytes.
#include "device.hpp"
#include "entries.hpp"
#include "stream.hpp"

#include <keel/plugin/boundary.hpp>
#include <keel/plugin/copy_args.hpp>

#include <string>

namespace keel::cpu {
namespace {

Result<void> check_memory_of(Device& device, keel_device_addr addr, const char* role) {
    if (addr == 0) return Error(KEEL_STATUS_INVALID_ARGUMENT, std::string(role) + " device address is 0");
    if (device.memory().tagged_here(addr)) return ok();
    const std::optional<std::uint32_t> other = device_of_address(addr);
    return Error(KEEL_STATUS_OUT_OF_RANGE,
                 std::string(role) + " " + hex(addr) + " is not memory of cpu:" + std::to_string(device.index()) +
                     (other ? " (it is memory of cpu:" + std::to_string(*other) + ")" : " (not a device address)"));
}

}  // namespace

namespace entries {

keel_error* device_can_copy_peer(keel_device device, keel_device peer, int32_t* out_can) {
    return plugin::entry("cpu device_can_copy_peer", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(Device * a, Device::from(device));
        KEEL_TRY_ASSIGN(Device * b, Device::from(peer));
        KEEL_TRY(plugin::require_non_null(out_can, "out_can"));
        *out_can = a != b ? 1 : 0;
        return ok();
    });
}

keel_error* memcpy_peer(keel_stream stream, keel_device dst_device, keel_device_addr dst, keel_device src_device,
                        keel_device_addr src, uint64_t size) {
    return plugin::entry("cpu memcpy_peer", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(Stream * s, Stream::from(stream));
        KEEL_TRY_ASSIGN(Device * to, Device::from(dst_device));
        KEEL_TRY_ASSIGN(Device * from, Device::from(src_device));
        if (to == from)
            return Error(KEEL_STATUS_INVALID_ARGUMENT, "both sides are memory of cpu:" + std::to_string(to->index()) +
                                                           " (a copy on one device is memcpy_d2d)");
        if (&s->device() != to && &s->device() != from)
            return Error(KEEL_STATUS_INVALID_ARGUMENT, "the stream is on cpu:" + std::to_string(s->device().index()) +
                                                           ", neither the source's cpu:" +
                                                           std::to_string(from->index()) + " nor the destination's cpu:" +
                                                           std::to_string(to->index()));
        if (size == 0) return s->check_usable();
        KEEL_TRY(check_memory_of(*to, dst, "destination"));
        KEEL_TRY(check_memory_of(*from, src, "source"));
        if (dst + size < dst || src + size < src)
            return Error(KEEL_STATUS_INVALID_ARGUMENT, "range overflows the address space");
        KEEL_TRY(s->enqueue([&](Op& op) {
            op.kind = OpKind::copy_peer;
            op.dst_addr = dst;
            op.src_addr = src;
            op.size = size;
        }));
        return ok();
    });
}

}  // namespace entries
}  // namespace keel::cpu
