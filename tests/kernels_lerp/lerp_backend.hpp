// What the shared lerp tests need from a device: memory, a synchronous
// launch, and what the device implements. One implementation per way of
// reaching the kernels (CPU kernels called directly, CUDA kernels called
// directly, a plugin through the C table), so one test body covers all.
#pragma once

#include <keel/keel.h>
#include <keel/result.hpp>
#include <keel/testing/launch_args.hpp>

#include <cstddef>
#include <functional>
#include <memory>
#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace keel::test {

using keel::testing::LaunchArgs;

// Not thread-safe: one test thread uses it. Owns every buffer it hands out.
class LerpBackend {
public:
    LerpBackend() = default;
    LerpBackend(const LerpBackend&) = delete;
    LerpBackend& operator=(const LerpBackend&) = delete;
    virtual ~LerpBackend() = default;

    // Why the backend cannot run here (no GPU, ...); empty when it can.
    [[nodiscard]] virtual std::string unavailable_reason() const { return {}; }
    [[nodiscard]] virtual std::vector<keel_dtype> dtypes() const = 0;
    // The dtype the backend computes and sums `dtype` in: its rounding
    // errors are bounded in that dtype's ulps (lerp_tolerance.hpp).
    [[nodiscard]] virtual keel_dtype compute_dtype(keel_dtype dtype) const = 0;
    // A device buffer of `bytes.size()` bytes holding `bytes` (0 for empty).
    [[nodiscard]] virtual keel_device_addr upload(std::span<const std::byte> bytes) = 0;
    [[nodiscard]] virtual std::vector<std::byte> download(keel_device_addr addr, std::size_t bytes) = 0;
    // Launches `kernel` and waits for it.
    [[nodiscard]] virtual Result<void> launch(std::string_view kernel, const LaunchArgs& args) = 0;
};

// A named way to make a backend: the parameter of the shared tests.
struct LerpBackendFactory {
    std::string name;
    std::function<std::unique_ptr<LerpBackend>()> make;
};

// GoogleTest prints a parameter by its name.
inline void PrintTo(const LerpBackendFactory& f, std::ostream* os) { *os << f.name; }

}  // namespace keel::test
