// Kernel (a plugin kernel found by name) and KernelArgs (its typed argument list).
#pragma once

#include <keel/buffer.hpp>
#include <keel/device.hpp>
#include <keel/export.hpp>
#include <keel/keel.h>
#include <keel/result.hpp>

#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace keel {

// A kernel of one device, found by name. A cheap shared reference like
// Device (the kernel handle is owned by the plugin and lives until it shuts
// down); copyable; may be shared across threads.
class KEEL_API Kernel {
public:
    // NOT_FOUND when the device has no such kernel; UNIMPLEMENTED when the
    // plugin has no kernels at all.
    [[nodiscard]] static Result<Kernel> find(const Device& device, std::string_view name);

    Kernel(const Kernel&) = default;
    Kernel& operator=(const Kernel&) = default;
    Kernel(Kernel&&) noexcept = default;
    Kernel& operator=(Kernel&&) noexcept = default;
    ~Kernel() = default;

    [[nodiscard]] const Device& device() const noexcept { return device_; }
    [[nodiscard]] const std::string& name() const noexcept { return name_; }

private:
    friend struct detail::Access;
    Kernel(Device device, keel_kernel handle, std::string name)
        : device_(std::move(device)), handle_(handle), name_(std::move(name)) {}

    Device device_;
    keel_kernel handle_ = nullptr;
    std::string name_;
};

// The typed argument list of one launch, built in order:
//
//   KernelArgs().scalar(2.0f).buffer(x, KEEL_DTYPE_F32).buffer(y, KEEL_DTYPE_F32)
//
// Buffers carry their size; scalars their explicit type; int arrays (shapes,
// strides) are copied in. The runtime does not interpret the list: the
// plugin validates it at launch. A plain value: copyable, not shared.
// A builder call on a temporary returns a temporary (the && overloads), so
// encode(), which points into the list, cannot be called on one.
class KEEL_API KernelArgs {
public:
    KernelArgs() = default;
    KernelArgs(const KernelArgs&) = default;
    KernelArgs& operator=(const KernelArgs&) = default;
    KernelArgs(KernelArgs&&) noexcept = default;
    KernelArgs& operator=(KernelArgs&&) noexcept = default;
    ~KernelArgs() = default;

    // Device memory of element type `dtype`. The view must stay valid until
    // the launch is enqueued; the memory until the kernel has run.
    KernelArgs& buffer(DeviceView view, keel_dtype dtype) &;
    KernelArgs&& buffer(DeviceView view, keel_dtype dtype) && { return std::move(buffer(view, dtype)); }
    // An absent optional buffer (address 0, size 0).
    KernelArgs& absent(keel_dtype dtype) &;
    KernelArgs&& absent(keel_dtype dtype) && { return std::move(absent(dtype)); }

    KernelArgs& scalar(float v) &;
    KernelArgs&& scalar(float v) && { return std::move(scalar(v)); }
    KernelArgs& scalar(double v) &;
    KernelArgs&& scalar(double v) && { return std::move(scalar(v)); }
    KernelArgs& scalar(std::int32_t v) &;
    KernelArgs&& scalar(std::int32_t v) && { return std::move(scalar(v)); }
    KernelArgs& scalar(std::int64_t v) &;
    KernelArgs&& scalar(std::int64_t v) && { return std::move(scalar(v)); }
    KernelArgs& scalar(std::uint32_t v) &;
    KernelArgs&& scalar(std::uint32_t v) && { return std::move(scalar(v)); }
    KernelArgs& scalar(std::uint64_t v) &;
    KernelArgs&& scalar(std::uint64_t v) && { return std::move(scalar(v)); }
    // A 16-bit float given by its raw bits; `dtype` is F16 or BF16.
    KernelArgs& scalar_bits16(keel_dtype dtype, std::uint16_t bits) &;
    KernelArgs&& scalar_bits16(keel_dtype dtype, std::uint16_t bits) && { return std::move(scalar_bits16(dtype, bits)); }

    // A small int64 array (shape, strides), copied into the list.
    KernelArgs& ints(std::initializer_list<std::int64_t> values) &;
    KernelArgs&& ints(std::initializer_list<std::int64_t> values) && { return std::move(ints(values)); }
    KernelArgs& ints(std::span<const std::int64_t> values) &;
    KernelArgs&& ints(std::span<const std::int64_t> values) && { return std::move(ints(values)); }

    [[nodiscard]] std::size_t size() const noexcept { return args_.size(); }

    // The list as the C ABI wants it. Int array pointers point into this
    // KernelArgs: valid while it lives unchanged, so only a named one
    // encodes (a temporary's arrays would be gone by the next statement).
    [[nodiscard]] std::vector<keel_kernel_arg> encode() const&;
    std::vector<keel_kernel_arg> encode() const&& = delete;

private:
    friend struct detail::Access;
    struct Arg {
        keel_kernel_arg c{};
        const detail::DeviceSlot* device = nullptr;  // of a buffer argument
        bool empty_view = false;  // an empty view: a mistake, unlike absent()
        std::vector<std::int64_t> ints{};
    };
    KEEL_LOCAL KernelArgs& push(Arg arg);

    std::vector<Arg> args_;
};

}  // namespace keel
