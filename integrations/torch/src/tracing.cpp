// keel's tracing and memory snapshots for a PyTorch program on keel devices
// (keel_torch.trace, keel_torch.memory_snapshot): the runtime's own, as the
// C++ API has them (<keel/trace.hpp>).
#include "devices.hpp"
#include "errors.hpp"
#include "torch_device.hpp"

#include <keel/trace.hpp>

#include <torch/library.h>

#include <mutex>
#include <optional>
#include <string>

namespace keel_torch {

namespace {

// The session started from Python (one per process, as keel allows).
std::mutex g_trace_mu;
std::optional<keel::Trace> g_trace;

std::string trace_start(const std::string& path, bool device_times) {
    std::lock_guard lock(g_trace_mu);
    keel::TraceOptions options{path};
    options.device_times = device_times;
    g_trace = unwrap(keel::Trace::start(std::move(options)));
    return path;
}

// The file written and its number of events.
std::tuple<std::string, std::int64_t> trace_stop() {
    std::lock_guard lock(g_trace_mu);
    if (!g_trace) unwrap(keel::Result<void>(keel::Error(KEEL_STATUS_FAILED_PRECONDITION,
                                                         "[keel_torch.trace] no trace was started from Python")));
    keel::Result<keel::TraceReport> report = g_trace->stop();
    g_trace.reset();
    const keel::TraceReport r = unwrap(std::move(report));
    return {r.path, static_cast<std::int64_t>(r.events)};
}

std::string memory_snapshot_json(std::int64_t device) {
    return unwrap(torch_device(static_cast<c10::DeviceIndex>(device)).memory()).snapshot().to_json();
}

void set_memory_history(bool on) { keel::set_memory_history(on); }

}  // namespace

TORCH_LIBRARY_FRAGMENT(keel, m) {
    m.def("trace_start", &trace_start);
    m.def("trace_stop", &trace_stop);
    m.def("memory_snapshot_json", &memory_snapshot_json);
    m.def("set_memory_history", &set_memory_history);
}

}  // namespace keel_torch
