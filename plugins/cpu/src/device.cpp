// The device: properties, handle ownership, and the shutdown leak report.
#include "device.hpp"

#include "entries.hpp"
#include "handle.hpp"
#include "event.hpp"
#include "parallel_for.hpp"
#include "plugin.hpp"
#include "stream.hpp"

#include <keel/plugin/boundary.hpp>
#include <keel/plugin/negotiation.hpp>

#include <algorithm>
#include <cstring>
#include <fstream>

namespace keel::cpu {
namespace {

std::string cpu_model() {
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("model name", 0) == 0) {
            auto colon = line.find(':');
            if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
        }
    }
    return "host CPU";
}

}  // namespace

Device::Device(const Config& config, std::uint32_t index, PinnedMemory& pinned, IdCounters& ids)
    : config_(config),
      memory_(config.memory_bytes, config.check, index),
      pinned_(pinned),
      ids_(ids),
      ipc_(std::make_unique<ipc::IpcDevice>(memory_, nullptr)) {}

Device::~Device() { magic_ = 0; }

Result<Device*> Device::from(keel_device d) {
    auto* device = reinterpret_cast<Device*>(d);
    if (device == nullptr) return Error(KEEL_STATUS_INVALID_ARGUMENT, "device is null");
    if (!looks_like<Device>(device, kMagic)) return Error(KEEL_STATUS_INVALID_ARGUMENT, "not a cpu device handle");
    return device;
}

keel_device_properties Device::properties() const {
    keel_device_properties p{};
    p.struct_size = sizeof p;
    std::string name = "keel reference CPU device (" + cpu_model() + ")";
    std::strncpy(p.name, name.c_str(), sizeof p.name - 1);
    std::strncpy(p.vendor, "keel", sizeof p.vendor - 1);
    p.total_memory = memory_.total_bytes();
    p.capabilities = KEEL_DEVICE_CAP_EVENT_TIMING | KEEL_DEVICE_CAP_CONCURRENT_STREAMS | KEEL_DEVICE_CAP_PINNED_MEMORY |
                     KEEL_DEVICE_CAP_PEER_COPY | KEEL_DEVICE_CAP_PEER_EVENT_WAIT |
                     KEEL_DEVICE_CAP_IPC_MEMORY | KEEL_DEVICE_CAP_IPC_EVENTS;
    p.compute_units = thread_pool_size();
    p.max_allocation = std::min(memory_.total_bytes(), kMaxAllocation);
    p.alloc_alignment = kAllocAlignment;
    return p;
}

Result<Stream*> Device::create_stream() {
    auto stream = std::make_unique<Stream>(*this, ++ids_.streams);
    Stream* raw = stream.get();
    std::lock_guard lock(handles_mutex_);
    streams_.emplace(raw, std::move(stream));
    return raw;
}

Result<void> Device::destroy_stream(Stream* s) {
    std::unique_ptr<Stream> owned;
    {
        std::lock_guard lock(handles_mutex_);
        auto it = streams_.find(s);
        if (it == streams_.end()) return Error(KEEL_STATUS_INVALID_ARGUMENT, "not a live stream of this device");
        owned = std::move(it->second);
        streams_.erase(it);
    }
    const std::shared_ptr<Timeline> timeline = owned->timeline();
    const std::uint64_t id = owned->id();
    owned.reset();  // runs the queued work, joins the worker
    if (checker_) checker_->stream_destroyed(id);
    if (timeline->failed())
        return Error(timeline->error().code(), "stream " + std::to_string(id) + " had failed: " + timeline->error().message());
    return ok();
}

Result<Event*> Device::create_event(std::uint32_t flags) {
    return events_.add(std::make_unique<Event>(*this, flags));
}

void Device::destroy_event(Event* e) {
    std::unique_ptr<Event> owned = events_.remove(e);  // destroyed here, outside the shard's lock
}

std::string Device::release_everything(bool with_pinned) {
    std::string report;
    auto allocations = memory_.live_allocations();
    auto blocks = with_pinned ? pinned_.live_blocks() : decltype(pinned_.live_blocks()){};
    std::unordered_map<Stream*, std::unique_ptr<Stream>> streams;
    {
        std::lock_guard lock(handles_mutex_);
        streams.swap(streams_);
    }
    std::vector<std::unique_ptr<Event>> events = events_.take_all();
    if (!allocations.empty() || !blocks.empty() || !streams.empty() || !events.empty()) {
        std::uint64_t device_bytes = 0, pinned_bytes = 0;
        for (const auto& a : allocations) device_bytes += a.size;
        for (const auto& b : blocks) pinned_bytes += b.size;
        report = "leak report: " + std::to_string(allocations.size()) + " device allocations (" +
                 std::to_string(device_bytes) + " bytes), " + std::to_string(blocks.size()) +
                 " pinned allocations (" + std::to_string(pinned_bytes) + " bytes), " +
                 std::to_string(streams.size()) + " streams, " + std::to_string(events.size()) +
                 " events still live at plugin_shutdown";
        std::size_t shown = 0;
        for (const auto& a : allocations) {
            if (shown++ == 8) break;
            report += "; device allocation #" + std::to_string(a.id) + " " + hex(a.base) + " (" +
                      std::to_string(a.size) + " bytes)";
        }
        for (const auto& b : blocks) {
            if (shown++ == 16) break;
            report += "; pinned allocation #" + std::to_string(b.id) + " " +
                      hex(reinterpret_cast<std::uintptr_t>(b.base)) + " (" + std::to_string(b.size) + " bytes)";
        }
    }
    streams.clear();  // joins their workers after running queued work
    events.clear();
    return report;
}

Result<keel_device_addr> Device::device_alloc(std::uint64_t size) {
    if (checker_) KEEL_TRY(checker_->before_alloc("device"));
    KEEL_TRY_ASSIGN(AllocationInfo a, memory_.allocate(size, next_allocation_id()));
    return a.base;
}

Result<void> Device::device_free(keel_device_addr addr) {
    if (std::optional<Result<void>> shared = ipc_->memory.check_free(addr)) [[unlikely]]
        KEEL_TRY(std::move(*shared));
    if (checker_) [[unlikely]] {
        KEEL_TRY(checker_->free_device(addr, [&]() -> Result<void> {
            KEEL_TRY(memory_.free(addr));
            return ok();
        }));
    } else {
        KEEL_TRY(memory_.free(addr));
    }
    ipc_->memory.forget_freed(addr);
    return ok();
}

Result<void*> Device::host_alloc(std::uint64_t size) {
    if (checker_) KEEL_TRY(checker_->before_alloc("pinned"));
    return pinned_.allocate(size, next_allocation_id());
}

Result<void> Device::host_free(void* ptr) {
    if (checker_) [[unlikely]] {
        return checker_->free_pinned(ptr, [&]() -> Result<void> {
            KEEL_TRY(pinned_.free(ptr));
            return ok();
        });
    }
    KEEL_TRY(pinned_.free(ptr));
    return ok();
}

namespace entries {

keel_error* device_count(uint32_t* out_count) {
    return plugin::entry("cpu device_count", [&]() -> Result<void> {
        KEEL_TRY(plugin::require_non_null(out_count, "out_count"));
        *out_count = static_cast<uint32_t>(the_plugin().device_count());
        return ok();
    });
}

keel_error* device_get(uint32_t index, keel_device* out_device) {
    return plugin::entry("cpu device_get", [&]() -> Result<void> {
        KEEL_TRY(plugin::require_non_null(out_device, "out_device"));
        Plugin& plugin = the_plugin();
        if (index >= plugin.device_count())
            return Error(KEEL_STATUS_NOT_FOUND, "device index " + std::to_string(index) + " out of range (" +
                                                    std::to_string(plugin.device_count()) + " devices)");
        *out_device = plugin.device(index).handle();
        return ok();
    });
}

keel_error* device_properties(keel_device device, keel_device_properties* out) {
    return plugin::entry("cpu device_properties", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(Device * d, Device::from(device));
        return plugin::write_device_properties(out, d->properties());
    });
}

keel_error* device_memory_info(keel_device device, uint64_t* out_free, uint64_t* out_total) {
    return plugin::entry("cpu device_memory_info", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(Device * d, Device::from(device));
        KEEL_TRY(plugin::require_non_null(out_free, "out_free"));
        KEEL_TRY(plugin::require_non_null(out_total, "out_total"));
        *out_total = d->memory().total_bytes();
        *out_free = d->memory().total_bytes() - d->memory().used_bytes();
        return ok();
    });
}

keel_error* device_alloc(keel_device device, uint64_t size, keel_device_addr* out_addr) {
    return plugin::entry("cpu device_alloc", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(Device * d, Device::from(device));
        KEEL_TRY(plugin::require_non_null(out_addr, "out_addr"));
        KEEL_TRY_ASSIGN(keel_device_addr addr, d->device_alloc(size));
        *out_addr = addr;
        return ok();
    });
}

keel_error* device_free(keel_device device, keel_device_addr addr) {
    return plugin::entry("cpu device_free", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(Device * d, Device::from(device));
        return d->device_free(addr);
    });
}

keel_error* host_alloc(keel_device device, uint64_t size, void** out_ptr) {
    return plugin::entry("cpu host_alloc", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(Device * d, Device::from(device));
        KEEL_TRY(plugin::require_non_null(out_ptr, "out_ptr"));
        KEEL_TRY_ASSIGN(void* p, d->host_alloc(size));
        *out_ptr = p;
        return ok();
    });
}

keel_error* host_free(keel_device device, void* ptr) {
    return plugin::entry("cpu host_free", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(Device * d, Device::from(device));
        KEEL_TRY(plugin::require_non_null(ptr, "ptr"));
        return d->host_free(ptr);
    });
}

}  // namespace entries
}  // namespace keel::cpu
