// What the library registers besides its aten kernels: the boxed CPU
// fallback of privateuseone (with its inventory) and torch.ops.keel, the
// operators the Python package keel_torch is written over (streams,
// allocator statistics, pinned memory). One translation unit, because torch
// headers cost seconds per file.
#include "errors.hpp"
#include "fallback.hpp"
#include "tensors.hpp"

#include <ATen/ATen.h>
#include <ATen/native/CPUFallback.h>
#include <torch/library.h>

#include <map>
#include <memory>
#include <mutex>


namespace keel_torch {

namespace {

const TorchDevice& device_at(std::int64_t index) {
    return torch_device(static_cast<c10::DeviceIndex>(index));
}

std::int64_t device_count() { return Devices::configured_count(); }

std::int64_t current_device() { return current_device_index(); }

std::string device_name(std::int64_t index) { return device_at(index).device().name(); }

std::int64_t new_stream(std::int64_t device) { return unwrap(device_at(device).pooled_stream()); }

// How many devices exist: 0 when a name in KEEL_TORCH_DEVICES does not.
std::int64_t available_count() {
    const keel::Result<const Devices*> devices = Devices::get();
    return devices.ok() ? devices.value()->count() : 0;
}

// The faults recover() cleared, as "STATUS: message" lines.
std::vector<std::string> recover(std::int64_t device) {
    std::vector<std::string> faults;
    for (const keel::Error& e : unwrap(device_at(device).recover()))
        faults.push_back(std::string(keel::status_name(e.code())) + ": " + e.message());
    return faults;
}

// Whether the tensor's bytes are known (false after recover() for memory
// that existed at the fault).
bool data_known_op(const at::Tensor& t) {
    TORCH_CHECK(is_keel(t), "[keel_torch] data_known: not a keel tensor (", t.device(), ")");
    return data_known(t.storage());
}

void set_device(std::int64_t index) {
    set_current_device_index(device_at(index).index());
}

// Events by id, for Python: a keel event made with timing.
struct EventTable {
    std::mutex mutex;
    std::int64_t next = 1;
    std::map<std::int64_t, std::shared_ptr<keel::Event>> events;
};

EventTable& event_table() {
    static EventTable table;
    return table;
}

std::shared_ptr<keel::Event> event_at(std::int64_t id) {
    EventTable& table = event_table();
    std::lock_guard lock(table.mutex);
    const auto found = table.events.find(id);
    TORCH_CHECK(found != table.events.end(), "[keel_torch] no event ", id);
    return found->second;
}

std::int64_t event_create(std::int64_t device, bool timing) {
    auto event = std::make_shared<keel::Event>(
        unwrap(keel::Event::create(device_at(device).device(), timing ? keel::EventTiming::on : keel::EventTiming::off)));
    EventTable& table = event_table();
    std::lock_guard lock(table.mutex);
    table.events.emplace(table.next, std::move(event));
    return table.next++;
}

void event_destroy(std::int64_t id) {
    EventTable& table = event_table();
    std::lock_guard lock(table.mutex);
    table.events.erase(id);
}

void event_record(std::int64_t id, std::int64_t device, std::int64_t stream) {
    unwrap(event_at(id)->record(*unwrap(device_at(device).stream(stream))));
}

void event_wait(std::int64_t id, std::int64_t device, std::int64_t stream) {
    unwrap(unwrap(device_at(device).stream(stream))->wait(*event_at(id)));
}

bool event_query(std::int64_t id) { return unwrap(event_at(id)->query()); }

void event_synchronize(std::int64_t id) { unwrap(event_at(id)->synchronize()); }

double event_elapsed_ms(std::int64_t start, std::int64_t end) {
    return unwrap(keel::Event::elapsed_ms(*event_at(start), *event_at(end)));
}

// Every byte of t's storage as a uint8 keel tensor (a view: no device work).
at::Tensor storage_bytes(const at::Tensor& t) {
    TORCH_CHECK(is_keel(t), "[keel_torch] storage_bytes: not a keel tensor (", t.device(), ")");
    at::Tensor bytes = at::empty({0}, t.options().dtype(at::kByte));
    const auto n = static_cast<std::int64_t>(t.storage().nbytes());
    return bytes.set_(t.storage(), 0, {n}, {1});
}

// A view of base's storage (keel bytes) with another dtype and shape.
at::Tensor alias_bytes(const at::Tensor& base, at::ScalarType dtype, std::int64_t offset, std::vector<std::int64_t> size,
                       std::vector<std::int64_t> stride) {
    TORCH_CHECK(is_keel(base), "[keel_torch] alias_bytes: not a keel tensor (", base.device(), ")");
    at::Tensor view = at::empty({0}, base.options().dtype(dtype));
    return view.set_(base.storage(), offset, size, stride);
}

// Fails the calling thread's current stream of the device as an
// asynchronous device fault does (a host function that returns
// DEVICE_ERROR when the stream reaches it), so that a program's way on
// after a fault (recover(), a new process group) can be tested on any
// device whose plugin lets a host function fail a stream.
void fail_current_stream(std::int64_t device, std::string message) {
    const keel::Stream& stream = current_keel_stream(device_at(device).index());
    TORCH_CHECK(stream.host_funcs_can_fail(), "[keel_torch] fail_current_stream: ", device_name(device),
                "'s plugin cannot fail a stream from a host function (keel.h 1.4)");
    unwrap(stream.enqueue_host_func([message = std::move(message)]() -> keel::Result<void> {
        return keel::Error(KEEL_STATUS_DEVICE_ERROR, "[keel_torch] injected fault: " + message);
    }));
}

void reset_peak_memory_stats(std::int64_t device) { unwrap(device_at(device).memory()).reset_peaks(); }

std::int64_t current_stream(std::int64_t device) {
    return current_stream_id(device_at(device).index());
}

void set_stream(std::int64_t device, std::int64_t stream) {
    const TorchDevice& d = device_at(device);
    unwrap(d.stream(stream));  // exists
    set_current_stream_id(d.index(), stream);
}

void synchronize_stream(std::int64_t device, std::int64_t stream) {
    unwrap(unwrap(device_at(device).stream(stream))->synchronize());
}

// Every stream of the device, in id order; the first error is thrown.
void synchronize_device(std::int64_t device) {
    const TorchDevice& d = device_at(device);
    unwrap(d.stream(0));
    for (std::int64_t id = 0; id < d.stream_count(); ++id) unwrap(unwrap(d.stream(id))->synchronize());
}

bool query_stream(std::int64_t device, std::int64_t stream) {
    return unwrap(unwrap(device_at(device).stream(stream))->query());
}

// Work enqueued on `stream` from now on runs after everything `other` has
// enqueued so far (on the device: the host does not wait).
void wait_stream(std::int64_t device, std::int64_t stream, std::int64_t other) {
    const TorchDevice& d = device_at(device);
    unwrap(unwrap(d.stream(stream))->order_after(*unwrap(d.stream(other))));
}

void record_stream_by_id(const at::Tensor& tensor, std::int64_t stream) {
    TORCH_CHECK(is_keel(tensor), "[keel_torch] record_stream: not a keel tensor (", tensor.device(), ")");
    record_data_on_stream(tensor.storage().data_ptr(),
                          c10::Stream(c10::Stream::UNSAFE, tensor.device(), stream));
}

c10::Dict<std::string, std::int64_t> memory_stats(std::int64_t device) {
    const keel::AllocatorStats s = unwrap(device_at(device).memory()).stats();
    c10::Dict<std::string, std::int64_t> out;
    const auto put = [&](const char* key, std::uint64_t value) { out.insert(key, static_cast<std::int64_t>(value)); };
    put("allocated_bytes", s.allocated_bytes);
    put("allocated_count", s.allocated_count);
    put("requested_bytes", s.requested_bytes);
    put("reserved_bytes", s.reserved_bytes);
    put("segment_count", s.segment_count);
    put("cached_bytes", s.cached_bytes);
    put("pending_free_bytes", s.pending_free_bytes);
    put("pending_free_count", s.pending_free_count);
    put("peak_allocated_bytes", s.peak_allocated_bytes);
    put("peak_reserved_bytes", s.peak_reserved_bytes);
    put("allocations", s.allocations);
    put("cache_hits", s.cache_hits);
    put("raw_allocations", s.raw_allocations);
    put("raw_frees", s.raw_frees);
    put("oom_retries", s.oom_retries);
    put("ooms", s.ooms);
    return out;
}

std::string memory_summary(std::int64_t device) {
    return unwrap(device_at(device).memory()).stats().to_string();
}

// Waits for every pending free, then returns the cached segments to the device.
void empty_cache(std::int64_t device) {
    const keel::MemoryPool memory = unwrap(device_at(device).memory());
    memory.synchronize();
    unwrap(memory.release_cached());
}

// A CPU tensor in page-locked memory of the device, with t's values.
at::Tensor pin_memory(const at::Tensor& t, std::int64_t device) {
    TORCH_CHECK(t.device().is_cpu(), "[keel_torch] pin_memory: a CPU tensor is needed, not ", t.device());
    const at::Tensor source = t.contiguous();
    const std::size_t bytes = source.nbytes();
    c10::Storage storage(c10::Storage::use_byte_size_t(), bytes,
                         allocate_pinned(static_cast<c10::DeviceIndex>(device), bytes), nullptr, false);
    at::Tensor pinned = at::empty({0}, source.options());
    pinned.set_(storage, 0, source.sizes(), source.strides());
    pinned.copy_(source);
    return pinned;
}

bool is_pinned(const at::Tensor& t) {
    return t.device().is_cpu() && t.has_storage() && pinned_buffer_of(t.storage().data_ptr()) != nullptr;
}

std::vector<std::string> fallback_ops() { return fallback_inventory(); }

void reset_fallback_ops() { reset_fallback_inventory(); }

c10::Dict<std::string, std::int64_t> fallback_costs() {
    c10::Dict<std::string, std::int64_t> out;
    for (const auto& [key, value] : fallback_counters()) out.insert(key, value);
    return out;
}

void reset_fallback_costs() { reset_fallback_counters(); }

std::vector<std::string> routed_to_cpu_kernels() { return route_cpu_kernels(); }

}  // namespace

namespace {

c10::DeviceIndex pinning_device(c10::optional<at::Device> device) {
    return device && device->has_index() ? device->index() : static_cast<c10::DeviceIndex>(current_device_index());
}

// tensor.pin_memory(device) and is_pinned(device) with a keel device:
// PyTorch sends them here by the device argument.
at::Tensor pin_memory_kernel(const at::Tensor& self, c10::optional<at::Device> device) {
    return pin_memory(self, pinning_device(device));
}

bool is_pinned_kernel(const at::Tensor& self, c10::optional<at::Device>) { return is_pinned(self); }

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
    m.impl("_pin_memory", TORCH_FN(pin_memory_kernel));
    m.impl("is_pinned", TORCH_FN(is_pinned_kernel));
}

TORCH_LIBRARY_IMPL(_, PrivateUse1, m) { m.fallback(torch::CppFunction::makeFromBoxedFunction<&cpu_fallback>()); }

TORCH_LIBRARY(keel, m) {
    m.def("device_count", &device_count);
    m.def("current_device", &current_device);
    m.def("device_name", &device_name);
    m.def("new_stream", &new_stream);
    m.def("available_count", &available_count);
    m.def("set_device", &set_device);
    m.def("recover", &recover);
    m.def("data_known", &data_known_op);
    m.def("fail_current_stream", &fail_current_stream);
    m.def("storage_bytes", &storage_bytes);
    m.def("alias_bytes", &alias_bytes);
    m.def("event_create", &event_create);
    m.def("event_destroy", &event_destroy);
    m.def("event_record", &event_record);
    m.def("event_wait", &event_wait);
    m.def("event_query", &event_query);
    m.def("event_synchronize", &event_synchronize);
    m.def("event_elapsed_ms", &event_elapsed_ms);
    m.def("reset_peak_memory_stats", &reset_peak_memory_stats);
    m.def("current_stream", &current_stream);
    m.def("set_stream", &set_stream);
    m.def("synchronize_stream", &synchronize_stream);
    m.def("synchronize", &synchronize_device);
    m.def("query_stream", &query_stream);
    m.def("wait_stream", &wait_stream);
    m.def("record_stream", &record_stream_by_id);
    m.def("memory_stats", &memory_stats);
    m.def("memory_summary", &memory_summary);
    m.def("empty_cache", &empty_cache);
    m.def("pin_memory", &pin_memory);
    m.def("is_pinned", &is_pinned);
    m.def("fallback_ops", &fallback_ops);
    m.def("reset_fallback_ops", &reset_fallback_ops);
    m.def("route_cpu_kernels", &routed_to_cpu_kernels);
    m.def("fallback_costs", &fallback_costs);
    m.def("reset_fallback_costs", &reset_fallback_costs);
}

}  // namespace keel_torch
