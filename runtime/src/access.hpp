// The runtime's own access to what its public types keep private: the
// device behind a Device or a view, a stream's memory instance, the parts
// of a Buffer, Fence or HostCopy that the memory machinery fills in. Public
// headers only befriend detail::Access; nothing here is part of the API.
#pragma once

#include <keel/buffer.hpp>
#include <keel/device.hpp>
#include <keel/memory_pool.hpp>
#include <keel/event.hpp>
#include <keel/fence.hpp>
#include <keel/host_copy.hpp>
#include <keel/host_func.hpp>
#include <keel/kernel.hpp>
#include <keel/pinned_buffer.hpp>
#include <keel/stream.hpp>

#include <atomic>
#include <cstddef>
#include <memory>
#include <utility>

namespace keel::doctor {
class StreamLedger;
}

namespace keel::trace {
class StreamTimes;
}

namespace keel::detail {

struct DeviceSlot;

struct Access {
    // ---- devices and views --------------------------------------------------
    [[nodiscard]] static const DeviceSlot& slot(const Device& device) noexcept { return *device.slot_; }
    [[nodiscard]] static const std::shared_ptr<const DeviceSlot>& slot_ptr(const Device& device) noexcept {
        return device.slot_;
    }
    [[nodiscard]] static Device device(std::shared_ptr<const DeviceSlot> slot) noexcept {
        return Device(std::move(slot));
    }
    [[nodiscard]] static const DeviceSlot* slot(const DeviceView& view) noexcept { return view.slot_; }
    [[nodiscard]] static DeviceView view(const DeviceSlot* slot, keel_device_addr address,
                                         std::uint64_t size) noexcept {
        DeviceView v;
        v.slot_ = slot;
        v.address_ = address;
        v.size_ = size;
        return v;
    }

    // ---- the plugin's handles behind the public types -------------------------
    [[nodiscard]] static keel_device handle(const Device& device) noexcept;  // device.cpp
    [[nodiscard]] static keel_stream handle(const Stream& stream) noexcept { return stream.handle_; }
    // The last trace session that named the stream (stream.cpp).
    [[nodiscard]] static std::atomic<std::uint32_t>& trace_seen(const Stream& stream) noexcept;
    // The stream's event timing for traces, made on first use (null where
    // the device has none; trace/event_times.hpp).
    [[nodiscard]] static trace::StreamTimes* stream_times(const Stream& stream) noexcept;
    [[nodiscard]] static keel_event handle(const Event& event) noexcept { return event.handle_; }
    [[nodiscard]] static const DeviceSlot* slot(const Event& event) noexcept { return event.device_; }
    // An Event around a plugin event made outside Event::create (keel::ipc).
    [[nodiscard]] static Event event(const DeviceSlot* slot, keel_event handle, std::uint32_t share,
                                     EventTiming timing) noexcept {
        return Event(slot, handle, share, timing);
    }
    [[nodiscard]] static keel_kernel handle(const Kernel& kernel) noexcept { return kernel.handle_; }

    // ---- host functions and kernel arguments -------------------------------
    [[nodiscard]] static std::unique_ptr<HostFuncBase> take(HostFunc&& fn) noexcept {
        return std::move(fn.impl_);
    }
    [[nodiscard]] static const DeviceSlot* device_of(const KernelArgs& args, std::size_t i) noexcept {
        return args.args_[i].device;
    }
    [[nodiscard]] static bool is_empty_view(const KernelArgs& args, std::size_t i) noexcept {
        return args.args_[i].empty_view;
    }
    // Argument i as the C ABI wants it (an int array points into `args`).
    [[nodiscard]] static keel_kernel_arg encoded(const KernelArgs& args, std::size_t i) noexcept {
        const auto& a = args.args_[i];
        keel_kernel_arg c = a.c;
        if (c.kind == KEEL_ARG_INT_ARRAY) {
            c.value.int_array.data = a.ints.data();
            c.value.int_array.count = a.ints.size();
        }
        return c;
    }

    // ---- memory -------------------------------------------------------------
    [[nodiscard]] static const std::shared_ptr<memory::MemoryCore>& core(const MemoryPool& m) noexcept {
        return m.core_;
    }
    [[nodiscard]] static MemoryPool memory(Device device, std::shared_ptr<memory::MemoryCore> core) noexcept {
        return MemoryPool(std::move(device), std::move(core));
    }
    // The memory instance `stream` uses, bound now if it had none (see
    // stream_memory.cpp). Valid while the stream lives.
    [[nodiscard]] static Result<const std::shared_ptr<memory::MemoryCore>*> core(const Stream& stream);
    // What the stream registry gave `stream` when it was created.
    [[nodiscard]] static std::uint64_t generation(const Stream& stream) noexcept;
    // The hang doctor's ledger of the stream (null for an empty stream).
    [[nodiscard]] static doctor::StreamLedger* ledger(const Stream& stream) noexcept;  // stream.cpp
    [[nodiscard]] static std::uint64_t& site(Fence& f) noexcept { return f.site_; }
    [[nodiscard]] static std::uint64_t site(const Fence& f) noexcept { return f.site_; }
    [[nodiscard]] static std::uint64_t& site(HostCopy& c) noexcept { return c.site_; }
    [[nodiscard]] static std::uint64_t site(const Event& e) noexcept { return e.site_.load(std::memory_order_relaxed); }

    // The copies a pinned buffer waits for before its memory goes.
    [[nodiscard]] static memory::PinnedUses* uses(const PinnedBuffer& b) noexcept { return b.uses_.get(); }

    [[nodiscard]] static memory::MemoryCore*& memory(Buffer& b) noexcept { return b.memory_; }
    [[nodiscard]] static memory::Block*& block(Buffer& b) noexcept { return b.block_; }
    [[nodiscard]] static memory::Block* block(const Buffer& b) noexcept { return b.block_; }
    [[nodiscard]] static DeviceView& view(Buffer& b) noexcept { return b.view_; }
    [[nodiscard]] static std::vector<memory::RecordedUse>& uses(Buffer& b) noexcept { return b.uses_; }
    [[nodiscard]] static memory::MemoryCore* memory(const Buffer& b) noexcept { return b.memory_; }

    [[nodiscard]] static memory::MemoryCore*& memory(Fence& f) noexcept { return f.memory_; }
    [[nodiscard]] static memory::MemoryCore* memory(const Fence& f) noexcept { return f.memory_; }
    [[nodiscard]] static memory::StreamPool*& share(Fence& f) noexcept { return f.share_; }
    [[nodiscard]] static const DeviceSlot*& device(Fence& f) noexcept { return f.device_; }
    [[nodiscard]] static const DeviceSlot* device(const Fence& f) noexcept { return f.device_; }
    [[nodiscard]] static keel_stream& from(Fence& f) noexcept { return f.from_; }
    [[nodiscard]] static keel_event& event(Fence& f) noexcept { return f.event_; }
    [[nodiscard]] static keel_event event(const Fence& f) noexcept { return f.event_; }
    [[nodiscard]] static std::uint64_t& seq(Fence& f) noexcept { return f.seq_; }

    [[nodiscard]] static std::shared_ptr<memory::MemoryCore>& memory(HostCopy& c) noexcept { return c.memory_; }
    [[nodiscard]] static keel_stream& stream(HostCopy& c) noexcept { return c.stream_; }
    [[nodiscard]] static keel_event& event(HostCopy& c) noexcept { return c.event_; }
    [[nodiscard]] static std::uint64_t& seq(HostCopy& c) noexcept { return c.seq_; }
};

}  // namespace keel::detail
