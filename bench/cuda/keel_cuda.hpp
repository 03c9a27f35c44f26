// The CUDA plugin as the benchmark uses it: dlopen'ed, initialised, and
// called through its C table, exactly as the runtime calls it, with nothing
// of the runtime in between (keel::test_support's LoadedPlugin).
#pragma once

#include <keel/keel.h>
#include <keel/testing/loaded_plugin.hpp>

#include <cuda_runtime_api.h>

#include <memory>
#include <string>

namespace keel::bench {

// Aborts the benchmark with `what` and the error's message when `error` is
// set: a benchmark that cannot do what it measures has nothing to report.
void must(keel_error* error, const char* what);
void must_cuda(cudaError_t error, const char* what);

// Loaded and initialised plugin. Move-only; shuts the plugin down and
// closes the library on destruction.
class KeelCuda {
public:
    // Null with `error` set when the library cannot be loaded or initialised.
    static std::unique_ptr<KeelCuda> load(std::string* error);
    KeelCuda(const KeelCuda&) = delete;
    KeelCuda& operator=(const KeelCuda&) = delete;
    KeelCuda(KeelCuda&&) = delete;
    KeelCuda& operator=(KeelCuda&&) = delete;
    ~KeelCuda();

    [[nodiscard]] const keel_plugin_api& api() const noexcept { return plugin_->api(); }
    [[nodiscard]] const std::string& path() const noexcept { return path_; }
    [[nodiscard]] uint32_t device_count() const;
    [[nodiscard]] std::string status() const;
    [[nodiscard]] keel_device device(uint32_t index) const;
    [[nodiscard]] keel_kernel kernel(keel_device device, const char* name) const;

private:
    struct Key {
        explicit Key() = default;
    };

public:
    explicit KeelCuda(Key) {}  // through load() only

private:
    std::string path_;
    std::unique_ptr<keel::testing::LoadedPlugin> plugin_;
};

}  // namespace keel::bench
