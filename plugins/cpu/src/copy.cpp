// Copies and memset: the entries (validation on the caller's thread, then
// an op on the stream) and their execution on the worker, where device
// addresses are translated and host memory is touched.
#include "device.hpp"
#include "entries.hpp"
#include "execute.hpp"
#include "kernel_registry.hpp"
#include "parallel_for.hpp"
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

Result<void> check_range(keel_device_addr addr, std::uint64_t size, const char* role) {
    if (addr == 0) return Error(KEEL_STATUS_INVALID_ARGUMENT, std::string(role) + " device address is 0");
    if (addr + size < addr)
        return Error(KEEL_STATUS_INVALID_ARGUMENT, std::string(role) + " range overflows the address space");
    return ok();
}

Result<void> check_host(const void* p, const char* role) {
    if (p == nullptr) return Error(KEEL_STATUS_INVALID_ARGUMENT, std::string(role) + " host pointer is null");
    return ok();
}

}  // namespace

// Checker: the pinned block a copy's host side lies in must still exist when
// the copy runs. A block freed in log mode is quarantined (poisoned): the
// copy goes ahead and moves poison, which is logged; a released block is
// not touched at all.
Result<void> check_pinned_still_there(Device& device, const Op& op) {
    const CheckedOp& c = *op.check;
    switch (device.pinned().state(c.pinned_id)) {
        case PinnedMemory::State::live: return ok();
        case PinnedMemory::State::quarantined:
            plugin::HostLog::write(KEEL_LOG_ERROR, "[cpu " + std::string(op_name(op.kind)) + "] " + c.use.describe() +
                                                       " runs after its pinned allocation #" +
                                                       std::to_string(c.pinned_id) +
                                                       " was freed: it moves poison (0xDB) bytes");
            return ok();
        case PinnedMemory::State::released: break;
    }
    return Error(KEEL_STATUS_DEVICE_ERROR, "host memory of pinned allocation #" + std::to_string(c.pinned_id) +
                                               " was freed and released before the copy ran");
}

Result<void> execute_copy(Device& device, Op& op) {
    if (op.check && op.check->pinned_id != 0) [[unlikely]]
        KEEL_TRY(check_pinned_still_there(device, op));
    switch (op.kind) {
        case OpKind::copy_h2d: {
            KEEL_TRY_ASSIGN(std::byte * dst, device_range(device, op.dst_addr, op.size, "destination"));
            if (op.check && op.check->source_fingerprint) [[unlikely]] {
                if (Checker::fingerprint(op.src_host, op.size) != *op.check->source_fingerprint)
                    return Error(KEEL_STATUS_DEVICE_ERROR,
                                 "host source " + hex(reinterpret_cast<std::uintptr_t>(op.src_host)) + " (" +
                                     std::to_string(op.size) +
                                     " bytes) changed between enqueue and execution: the host reused or freed "
                                     "it before the copy ran");
            }
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
            copy_bytes(static_cast<std::byte*>(op.dst_host), src, op.size);
            return ok();
        }
        case OpKind::copy_d2d: {
            KEEL_TRY_ASSIGN(std::byte * src, device_range(device, op.src_addr, op.size, "source"));
            KEEL_TRY_ASSIGN(std::byte * dst, device_range(device, op.dst_addr, op.size, "destination"));
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

void register_op_with_checker(Device& device, Op& op, std::uint64_t stream_id) {
    Checker& checker = *device.checker();
    if (op.kind == OpKind::stop) return;
    if (!op.check) op.check = std::make_unique<CheckedOp>();
    CheckedOp& c = *op.check;
    c.source_fingerprint.reset();
    c.host_write_begin = c.host_write_end = 0;
    c.pinned_id = 0;
    std::vector<std::uint64_t>& ids = c.allocation_ids;
    ids.clear();
    auto device_use = [&](keel_device_addr addr) {
        if (auto a = device.memory().find_live(addr)) ids.push_back(a->id);
    };
    auto host_use = [&](const void* p, std::uint64_t size) {
        if (auto b = device.pinned().find_containing(p, size)) {
            ids.push_back(b->id);
            c.pinned_id = b->id;
        }
    };
    switch (op.kind) {
        case OpKind::copy_h2d:
            device_use(op.dst_addr);
            host_use(op.src_host, op.size);
            if (checker.config().check_host_sources) {
                auto begin = reinterpret_cast<std::uintptr_t>(op.src_host);
                // A pending d2h into this range legitimately changes it first.
                if (!checker.host_range_pending_write(begin, begin + op.size))
                    c.source_fingerprint = Checker::fingerprint(op.src_host, op.size);
            }
            break;
        case OpKind::copy_h2d_inline:
        case OpKind::memset_d8: device_use(op.dst_addr); break;
        case OpKind::copy_d2h:
            device_use(op.src_addr);
            host_use(op.dst_host, op.size);
            c.host_write_begin = reinterpret_cast<std::uintptr_t>(op.dst_host);
            c.host_write_end = c.host_write_begin + op.size;
            break;
        case OpKind::copy_d2d:
            device_use(op.src_addr);
            device_use(op.dst_addr);
            break;
        case OpKind::kernel:
            for (const BufferUse& b : op.kernel->buffers())
                if (b.addr != 0) device_use(b.addr);
            break;
        default: break;
    }
    c.use = PendingUse{op.kind == OpKind::kernel ? "kernel " : "",
                       op.kind == OpKind::kernel ? op.kernel->name : op_name(op.kind), op.position, stream_id};
    checker.on_enqueue(op);
}

namespace entries {

keel_error* memcpy_h2d(keel_stream stream, keel_device_addr dst, const void* src, uint64_t size) {
    return plugin::entry("cpu memcpy_h2d", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(Stream * s, Stream::from(stream));
        if (size == 0) return s->check_usable();
        KEEL_TRY(check_range(dst, size, "destination"));
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
        KEEL_TRY(check_range(src, size, "source"));
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
