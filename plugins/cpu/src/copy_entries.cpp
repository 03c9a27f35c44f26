// Copies and memset: the entries (validation on the caller's thread, then
// an op on the stream) and their execution on the worker, where device
// addresses are translated and host memory is touched.
#include "checker/guarded_pages.hpp"
#include "checker/host_memory.hpp"
#include "device.hpp"
#include "device_memories.hpp"
#include "plugin.hpp"
#include "entries.hpp"
#include "execute.hpp"
#include "kernel_registry.hpp"
#include "parallel_for.hpp"
#include "poison.hpp"
#include "stream.hpp"
#include "stream_copy.hpp"

#include <keel/plugin/boundary.hpp>
#include <keel/plugin/copy_args.hpp>
#include <keel/plugin/host_log.hpp>

#include <cstring>

namespace keel::cpu {
namespace {

// Large copies use the kernel pool: a CPU device should use its cores.
constexpr std::uint64_t kParallelBytes = 8u << 20;
constexpr std::uint64_t kParallelGrain = 1u << 20;

// Runs `part(begin, end)` over the byte range [0, size): at once for small
// sizes, split over the cores for large ones.
template <class Part>
void over_cores(std::uint64_t size, Part&& part) {
    if (size < kParallelBytes) {
        part(std::size_t{0}, static_cast<std::size_t>(size));
        return;
    }
    parallel_for(size, kParallelGrain, part);
}

void copy_bytes(std::byte* dst, const std::byte* src, std::uint64_t size) {
    over_cores(size, [&](std::size_t b, std::size_t e) { std::memcpy(dst + b, src + b, e - b); });
}

// Writes into device memory: streaming stores, as a DMA engine writes.
void copy_to_device_memory(std::byte* dst, const std::byte* src, std::uint64_t size) {
    over_cores(size, [&](std::size_t b, std::size_t e) { copy_streaming(dst + b, src + b, e - b); });
}

void set_bytes(std::byte* dst, std::uint8_t value, std::uint64_t size) {
    over_cores(size, [&](std::size_t b, std::size_t e) { std::memset(dst + b, value, e - b); });
}

Result<std::byte*> device_range(Device& device, keel_device_addr addr, std::uint64_t size, const char* role) {
    auto r = device.memory().translate(addr, size);
    if (!r.ok()) return Error(r.error().code(), std::string(role) + " " + r.error().message());
    return r;
}

// Memory of another device of this plugin, refused at the call: only
// memcpy_peer crosses devices.
Result<void> check_device_of(Stream& s, keel_device_addr addr, const char* role) {
    if (s.device().memory().tagged_here(addr)) [[likely]] return ok();
    const std::optional<std::uint32_t> other = device_of_address(addr);
    if (!other) return ok();  // not a device address at all: reported when the op runs
    return Error(KEEL_STATUS_OUT_OF_RANGE, std::string(role) + " " + hex(addr) + " is memory of cpu:" +
                                               std::to_string(*other) + ", but the stream is on cpu:" +
                                               std::to_string(s.device().index()) +
                                               " (a copy between devices goes through memcpy_peer)");
}

Result<void> check_range(keel_device_addr addr, std::uint64_t size, const char* role) {
    if (addr == 0) return Error(KEEL_STATUS_INVALID_ARGUMENT, std::string(role) + " device address is 0");
    if (addr + size < addr)
        return Error(KEEL_STATUS_INVALID_ARGUMENT, std::string(role) + " range overflows the address space");
    return ok();
}

Result<std::byte*> peer_range(const DeviceMemories& memories, keel_device_addr addr, std::uint64_t size,
                              const char* role) {
    auto r = memories.translate(addr, size);
    if (!r.ok()) return Error(r.error().code(), std::string(role) + " " + r.error().message());
    return r;
}

Result<void> check_host(const void* p, const char* role) {
    if (p == nullptr) return Error(KEEL_STATUS_INVALID_ARGUMENT, std::string(role) + " host pointer is null");
    return ok();
}

}  // namespace

// Checker: the pinned block a copy's host side lies in must still exist when
// the copy runs (true: it does). A block freed in log mode is quarantined
// (poisoned, its pages inaccessible): the copy moves poison instead, which
// is logged (false); a released block is not touched at all.
Result<bool> check_pinned_still_there(Device& device, const Op& op) {
    const CheckedOp& c = *op.check;
    switch (device.pinned().state(c.pinned_id)) {
        case PinnedMemory::State::live: return true;
        case PinnedMemory::State::quarantined:
            plugin::HostLog::write(KEEL_LOG_ERROR, "[cpu " + std::string(op_name(op.kind)) + "] " + c.use.describe() +
                                                       " runs after its pinned allocation #" +
                                                       std::to_string(c.pinned_id) +
                                                       " was freed: it moves poison (0xDB) bytes");
            return false;
        case PinnedMemory::State::released: break;
    }
    return Error(KEEL_STATUS_DEVICE_ERROR, "host memory of pinned allocation #" + std::to_string(c.pinned_id) +
                                               " was freed and released before the copy ran");
}

// Checker: the host side of a copy is touched only through host_memory,
// which reports memory the host unmapped before the copy ran instead of
// faulting on it.
Error host_memory_gone(const Op& op, const char* role, const Error& e) {
    return Error(e.code(), "use after free of host memory: " + op.check->use.describe() + ": its host " + role +
                               " " + e.message() + " when the copy ran: the host freed it before the copy " +
                               "completed (wait for the copy, with an event or stream_synchronize, before freeing)");
}

// Pinned memory (pinned_id set when the whole range lies in one block, and
// checked still there before) is the plugin's own and copied directly.
// Guarded pages of pending copies in the range are opened meanwhile.
Result<void> copy_from_host_checked(std::byte* dst, const Op& op) {
    guarded_pages::HostAccess access(op.src_host, op.size);
    if (op.check->pinned_id != 0) std::memcpy(dst, op.src_host, op.size);
    else if (auto r = host_memory::read(dst, op.src_host, op.size); !r.ok())
        return host_memory_gone(op, "source", r.error());
    if (const auto& expected = op.check->source_fingerprint) {
        host_memory::Fingerprint now;
        now.add(dst, op.size);
        if (now.value() != *expected)
            return Error(KEEL_STATUS_DEVICE_ERROR,
                         "host source " + hex(reinterpret_cast<std::uintptr_t>(op.src_host)) + " (" +
                             std::to_string(op.size) +
                             " bytes) changed between enqueue and execution: the host reused or freed it "
                             "before the copy ran");
    }
    return ok();
}

std::string host_range_text(const Op& op, const void* p) {
    return "[" + hex(reinterpret_cast<std::uintptr_t>(p)) + ", +" + std::to_string(op.size) + " bytes)";
}

// Checker: the destination of a d2h is still what the enqueue guarded and
// fingerprinted (checker/pending_destinations.cpp); then it is written.
Result<void> copy_to_host_checked(const Op& op, const std::byte* src) {
    const CheckedOp& c = *op.check;
    const std::string range = host_range_text(op, op.dst_host);
    const char* const fix = ": the host freed or reallocated it before the copy completed (wait for the copy, with "
                            "an event or stream_synchronize, before freeing or growing it)";
    if (c.host_guard != 0) {
        const guarded_pages::PageCheck page = guarded_pages::check_pending_write(c.host_guard);
        if (page.state != guarded_pages::PageState::guarded) {
            guarded_pages::release_pending_write(c.host_guard);  // the pages are not the copy's any more
            const bool unmapped = page.state == guarded_pages::PageState::unmapped;
            return Error(KEEL_STATUS_OUT_OF_RANGE,
                         "use after free of host memory: " + c.use.describe() + ": its host destination " + range +
                             (unmapped ? " was unmapped (page " + hex(page.page) + ")"
                                       : " was freed and mapped again (page " + hex(page.page) +
                                             " is no longer the inaccessible page the checker left)") +
                             " before the copy ran" + fix);
        }
    }
    guarded_pages::HostAccess access(op.dst_host, op.size);
    if (!access.ok())
        return host_memory_gone(op, "destination", Error(KEEL_STATUS_OUT_OF_RANGE, range + " is not mapped"));
    if (const auto& expected = c.destination_fingerprint) {
        Result<std::uint64_t> now = 0;
        if (c.pinned_id != 0) {
            host_memory::Fingerprint f;
            f.add(static_cast<const std::byte*>(op.dst_host), op.size);
            now = f.value();
        } else {
            now = host_memory::fingerprint(op.dst_host, op.size);
        }
        if (!now.ok()) return host_memory_gone(op, "destination", now.error());
        if (*now != *expected)
            return Error(KEEL_STATUS_DEVICE_ERROR,
                         "host memory changed before the copy ran: " + c.use.describe() + ": its host destination " +
                             range + " was written, freed or reallocated by the host between the enqueue and the " +
                             "copy (the host must not touch a copy's destination until it has observed the copy's " +
                             "completion: wait for the copy, with an event or stream_synchronize, first)");
    }
    if (c.pinned_id != 0) {
        copy_bytes(static_cast<std::byte*>(op.dst_host), src, op.size);
        return ok();
    }
    if (auto r = host_memory::write(op.dst_host, src, op.size); !r.ok())
        return host_memory_gone(op, "destination", r.error());
    return ok();
}

// A copy whose pinned host side was freed (and is quarantined): the device
// side of a host-to-device copy receives poison, a device-to-host copy
// writes nothing.
Result<void> move_poison(Device& device, const Op& op) {
    if (op.kind == OpKind::copy_h2d) {
        KEEL_TRY_ASSIGN(std::byte * dst, device_range(device, op.dst_addr, op.size, "destination"));
        set_bytes(dst, poison::kFreedPinnedByte, op.size);
    }
    return ok();
}

Result<void> execute_copy(Device& device, Op& op) {
    if (op.check && op.check->pinned_id != 0) [[unlikely]] {
        KEEL_TRY_ASSIGN(const bool still_there, check_pinned_still_there(device, op));
        if (!still_there) return move_poison(device, op);
    }
    switch (op.kind) {
        case OpKind::copy_h2d: {
            KEEL_TRY_ASSIGN(std::byte * dst, device_range(device, op.dst_addr, op.size, "destination"));
            if (op.check) [[unlikely]] return copy_from_host_checked(dst, op);
            copy_to_device_memory(dst, static_cast<const std::byte*>(op.src_host), op.size);
            return ok();
        }
        case OpKind::copy_h2d_inline: {
            KEEL_TRY_ASSIGN(std::byte * dst, device_range(device, op.dst_addr, op.size, "destination"));
            std::memcpy(dst, op.inline_bytes.data(), op.size);
            return ok();
        }
        case OpKind::copy_d2h: {
            KEEL_TRY_ASSIGN(std::byte * src, device_range(device, op.src_addr, op.size, "source"));
            if (op.check) [[unlikely]] return copy_to_host_checked(op, src);
            copy_bytes(static_cast<std::byte*>(op.dst_host), src, op.size);
            return ok();
        }
        case OpKind::copy_d2d: {
            KEEL_TRY_ASSIGN(std::byte * src, device_range(device, op.src_addr, op.size, "source"));
            KEEL_TRY_ASSIGN(std::byte * dst, device_range(device, op.dst_addr, op.size, "destination"));
            copy_to_device_memory(dst, src, op.size);
            return ok();
        }
        case OpKind::copy_peer: {
            // Each address is translated by the device it names (checked at
            // the call to be the device it was given with).
            const DeviceMemories& memories = the_plugin().memories();
            KEEL_TRY_ASSIGN(std::byte * src, peer_range(memories, op.src_addr, op.size, "source"));
            KEEL_TRY_ASSIGN(std::byte * dst, peer_range(memories, op.dst_addr, op.size, "destination"));
            copy_to_device_memory(dst, src, op.size);
            return ok();
        }
        case OpKind::memset_d8: {
            KEEL_TRY_ASSIGN(std::byte * dst, device_range(device, op.dst_addr, op.size, "destination"));
            set_bytes(dst, op.value, op.size);
            return ok();
        }
        default: return Error(KEEL_STATUS_INTERNAL, "not a copy");
    }
}

namespace entries {

keel_error* memcpy_h2d(keel_stream stream, keel_device_addr dst, const void* src, uint64_t size) {
    return plugin::entry("cpu memcpy_h2d", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(Stream * s, Stream::from(stream));
        if (size == 0) return s->check_usable();
        KEEL_TRY(check_range(dst, size, "destination"));
        KEEL_TRY(check_device_of(*s, dst, "destination"));
        KEEL_TRY(check_host(src, "source"));
        KEEL_TRY(s->enqueue([&](Op& op) {
            op.kind = OpKind::copy_h2d;
            op.dst_addr = dst;
            op.src_host = src;
            op.size = size;
        }));
        return ok();
    });
}

keel_error* memcpy_d2h(keel_stream stream, void* dst, keel_device_addr src, uint64_t size) {
    return plugin::entry("cpu memcpy_d2h", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(Stream * s, Stream::from(stream));
        if (size == 0) return s->check_usable();
        KEEL_TRY(check_range(src, size, "source"));
        KEEL_TRY(check_device_of(*s, src, "source"));
        KEEL_TRY(check_host(dst, "destination"));
        KEEL_TRY(s->enqueue([&](Op& op) {
            op.kind = OpKind::copy_d2h;
            op.dst_host = dst;
            op.src_addr = src;
            op.size = size;
        }));
        return ok();
    });
}

keel_error* memcpy_d2d(keel_stream stream, keel_device_addr dst, keel_device_addr src, uint64_t size) {
    return plugin::entry("cpu memcpy_d2d", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(Stream * s, Stream::from(stream));
        if (size == 0) return s->check_usable();
        KEEL_TRY(check_range(dst, size, "destination"));
        KEEL_TRY(check_device_of(*s, dst, "destination"));
        KEEL_TRY(check_range(src, size, "source"));
        KEEL_TRY(check_device_of(*s, src, "source"));
        KEEL_TRY(plugin::check_no_overlap(dst, src, size));
        KEEL_TRY(s->enqueue([&](Op& op) {
            op.kind = OpKind::copy_d2d;
            op.dst_addr = dst;
            op.src_addr = src;
            op.size = size;
        }));
        return ok();
    });
}

keel_error* memset_d8(keel_stream stream, keel_device_addr dst, uint8_t value, uint64_t size) {
    return plugin::entry("cpu memset_d8", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(Stream * s, Stream::from(stream));
        if (size == 0) return s->check_usable();
        KEEL_TRY(check_range(dst, size, "destination"));
        KEEL_TRY(check_device_of(*s, dst, "destination"));
        KEEL_TRY(s->enqueue([&](Op& op) {
            op.kind = OpKind::memset_d8;
            op.dst_addr = dst;
            op.value = value;
            op.size = size;
        }));
        return ok();
    });
}

keel_error* memcpy_h2d_inline(keel_stream stream, keel_device_addr dst, const void* src, uint64_t size) {
    return plugin::entry("cpu memcpy_h2d_inline", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(Stream * s, Stream::from(stream));
        KEEL_TRY(plugin::check_inline_copy_size(size));
        if (size == 0) return s->check_usable();
        KEEL_TRY(check_range(dst, size, "destination"));
        KEEL_TRY(check_device_of(*s, dst, "destination"));
        KEEL_TRY(check_host(src, "source"));
        KEEL_TRY(s->enqueue([&](Op& op) {
            op.kind = OpKind::copy_h2d_inline;
            op.dst_addr = dst;
            op.size = size;
            std::memcpy(op.inline_bytes.data(), src, size);  // captured now: the caller may reuse src
        }));
        return ok();
    });
}

}  // namespace entries
}  // namespace keel::cpu
