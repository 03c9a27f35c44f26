// The plugin alone, for table 6's own-time line: the same enqueues (a
// 256-byte device-to-device copy, a "fill" launch) made straight through the
// C ABI of a second instance of the device's plugin, loaded from a copy of
// its file (so that it has globals of its own). keel's own time per enqueue
// is keel's figure minus this instance's.
#pragma once

#include "worker_gate.hpp"

#include <keel/keel.h>
#include <keel/keel.hpp>

#include <memory>
#include <string>

namespace keel_bench {

class PluginCopy;

// One stream of the second instance, with two 256-byte buffers and the
// "fill" kernel. Single-threaded use.
class RawStream {
public:
    RawStream(const keel::Runtime& runtime, const keel::Device& device);
    RawStream(const RawStream&) = delete;
    RawStream& operator=(const RawStream&) = delete;
    RawStream(RawStream&&) = delete;
    RawStream& operator=(RawStream&&) = delete;
    ~RawStream();

    // Not empty: the instance could not be set up, and why.
    [[nodiscard]] const std::string& why_not() const { return why_not_; }

    // The measured enqueues; the error (to release with error_text) or null.
    [[nodiscard]] keel_error* copy() const { return api_->memcpy_d2d(stream_, dst_, src_, kBytes); }
    [[nodiscard]] keel_error* launch() const { return api_->kernel_launch(stream_, fill_, &launch_); }

    // Enqueues a host function that holds the worker in `gate`; "" or the error.
    [[nodiscard]] std::string hold(WorkerGate& gate) const;
    [[nodiscard]] std::string synchronize() const;

    static constexpr std::uint64_t kBytes = 256;  // as table 6's rows

private:
    std::unique_ptr<PluginCopy> plugin_;
    const keel_plugin_api* api_ = nullptr;
    keel_device device_ = nullptr;
    keel_stream stream_ = nullptr;
    keel_device_addr src_ = 0, dst_ = 0;
    keel_kernel fill_ = nullptr;
    keel_kernel_arg args_[2]{};
    keel_launch_args launch_{};
    std::string why_not_;
};

// A plugin call's error as text (and the error released); "" for null.
std::string error_text(keel_error* e);

}  // namespace keel_bench
