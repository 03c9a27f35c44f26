// What the shared lerp tests need from a device: memory, a synchronous
// launch, and what the device implements. One implementation per way of
// reaching the kernels (CPU kernels called directly, CUDA kernels called
// directly, a plugin through the C table), so one test body covers all.
#pragma once

#include <keel/keel.h>
#include <keel/testing/c_kernel_args.hpp>
#include <keel/result.hpp>

#include <cstddef>
#include <functional>
#include <memory>
#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace keel::test {

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
    // Relative precision of the backend's reduction accumulator for `dtype`.
    [[nodiscard]] virtual double accumulation_roundoff(keel_dtype dtype) const = 0;
    // A device buffer of `bytes.size()` bytes holding `bytes` (0 for empty).
    [[nodiscard]] virtual keel_device_addr upload(std::span<const std::byte> bytes) = 0;
    [[nodiscard]] virtual std::vector<std::byte> download(keel_device_addr addr, std::size_t bytes) = 0;
    // Launches `kernel` and waits for it.
    [[nodiscard]] virtual Result<void> launch(std::string_view kernel, const keel_launch_args& args) = 0;
};

// A named way to make a backend: the parameter of the shared tests.
struct LerpBackendFactory {
    std::string name;
    std::function<std::unique_ptr<LerpBackend>()> make;
};

// GoogleTest prints a parameter by its name.
inline void PrintTo(const LerpBackendFactory& f, std::ostream* os) { *os << f.name; }

// Builds a launch's argument list; keeps the int arrays alive.
class LaunchBuilder {
public:
    LaunchBuilder() = default;
    LaunchBuilder(const LaunchBuilder&) = delete;
    LaunchBuilder& operator=(const LaunchBuilder&) = delete;

    LaunchBuilder& buffer(keel_device_addr addr, std::uint64_t size, keel_dtype dtype) {
        args_.push_back(keel::testing::buffer_arg(addr, size, dtype));
        return *this;
    }
    LaunchBuilder& absent(keel_dtype dtype) { return buffer(0, 0, dtype); }
    LaunchBuilder& scalar_f64(double v) {
        args_.push_back(keel::testing::f64_arg(v));
        return *this;
    }
    LaunchBuilder& scalar_f32(float v) {
        args_.push_back(keel::testing::f32_arg(v));
        return *this;
    }
    LaunchBuilder& ints(std::vector<std::int64_t> values) {
        arrays_.push_back(std::make_unique<std::vector<std::int64_t>>(std::move(values)));
        args_.push_back(keel::testing::ints_arg(arrays_.back()->data(), arrays_.back()->size()));
        return *this;
    }
    // Valid while this builder lives and is not changed.
    [[nodiscard]] keel_launch_args args() const {
        return keel::testing::launch_args(args_);
    }
    [[nodiscard]] keel_kernel_arg& at(std::size_t i) { return args_.at(i); }

private:
    std::vector<keel_kernel_arg> args_;
    std::vector<std::unique_ptr<std::vector<std::int64_t>>> arrays_;
};

}  // namespace keel::test
