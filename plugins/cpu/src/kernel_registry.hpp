// The CPU device's kernels, table-driven.
//
// HOW TO ADD A KERNEL (e.g. `lerp`):
//  1. Write plugins/cpu/src/kernels/lerp.cpp defining, in namespace
//     keel::cpu::kernels,
//        Result<KernelWork> validate_lerp(const plugin::LaunchArgsView& args);
//     It runs on the CALLER's thread inside kernel_launch, before anything
//     is enqueued: check the count, kinds, dtypes and sizes with `args`
//     (errors become KEEL_STATUS_INVALID_ARGUMENT naming the argument),
//     declare every device buffer the kernel touches, in order, with
//     KEEL_TRY_ASSIGN(std::size_t i, work.use(buffer, Access::read | write |
//     read_write, "role")), and set
//     work.body to a callable capturing only values (scalars, shapes; never
//     the args, which die when launch returns).
//     The body runs LATER on the stream's worker as
//        Result<void> body(const KernelBuffers& b)
//     where b.get<float>(i) is the host pointer of the i-th declared buffer,
//     already translated and bounds-checked (null for an absent optional
//     buffer). Large loops should use parallel_for() (parallel_for.hpp).
//  2. Add the line  KEEL_CPU_KERNEL(lerp)  to kernels/kernel_list.inc and the
//     file to plugins/cpu/CMakeLists.txt. Nothing else changes.
//
// Thread-safety: the registry is immutable after plugin init; KernelWork is
// built on one thread and then sent to one worker.
#pragma once

#include "kernel_body.hpp"

#include <keel/keel.h>
#include <keel/plugin/kernel_args.hpp>
#include <keel/result.hpp>

#include <array>
#include <cstddef>
#include <span>
#include <string>
#include <vector>

namespace keel::cpu {

enum class Access : std::uint8_t { read, write, read_write };

struct BufferUse {
    keel_device_addr addr = 0;
    std::uint64_t size = 0;
    Access access = Access::read;
    const char* role = "";
};

// Host pointers of a launch's declared buffers, in declaration order.
class KernelBuffers {
public:
    explicit KernelBuffers(std::span<std::byte* const> ptrs) : ptrs_(ptrs) {}
    template <class T>
    [[nodiscard]] T* get(std::size_t i) const noexcept {
        return reinterpret_cast<T*>(ptrs_[i]);
    }

private:
    std::span<std::byte* const> ptrs_;
};

// What a validated launch runs on the worker.
class KernelWork {
public:
    static constexpr std::size_t kMaxBuffers = 16;
    using Body = KernelBody;

    KernelWork() = default;
    KernelWork(const KernelWork&) = delete;
    KernelWork& operator=(const KernelWork&) = delete;
    KernelWork(KernelWork&&) noexcept = default;
    KernelWork& operator=(KernelWork&&) noexcept = default;
    ~KernelWork() = default;

    // Declares a buffer; returns its index for KernelBuffers::get. An
    // absent optional buffer (addr 0, size 0) is declared too (null pointer).
    // INTERNAL past kMaxBuffers (a bug of the kernel, not of the caller).
    [[nodiscard]] Result<std::size_t> use(const plugin::BufferArg& buffer, Access access, const char* role) {
        if (count_ == kMaxBuffers)
            return Error(KEEL_STATUS_INTERNAL, std::string("the kernel declares more than ") +
                                                   std::to_string(kMaxBuffers) + " buffers ('" + role +
                                                   "' is one too many)");
        uses_[count_] = BufferUse{buffer.addr, buffer.size, access, role};
        return count_++;
    }
    [[nodiscard]] std::span<const BufferUse> buffers() const noexcept { return {uses_.data(), count_}; }
    // Empty again, keeping the storage (an op reuses it for its next launch).
    void clear() noexcept {
        body = nullptr;
        name = "";
        count_ = 0;
    }

    Body body;
    const char* name = "";  // set by the registry

private:
    std::array<BufferUse, kMaxBuffers> uses_{};
    std::size_t count_ = 0;
};

using ValidateKernel = Result<KernelWork> (*)(const plugin::LaunchArgsView& args);

// One kernel; keel_kernel handles point at these.
struct KernelDef {
    const char* name;
    ValidateKernel validate;
};

// The table of every kernel (kernels/kernel_list.inc).
[[nodiscard]] std::span<const KernelDef> all_kernels() noexcept;
[[nodiscard]] const KernelDef* find_kernel(std::string_view name) noexcept;
// True when `p` is one of the table's entries (handle validation).
[[nodiscard]] bool is_kernel(const void* p) noexcept;

namespace kernels {
#define KEEL_CPU_KERNEL(name) Result<KernelWork> validate_##name(const plugin::LaunchArgsView& args);
#include "kernels/kernel_list.inc"
#undef KEEL_CPU_KERNEL
}  // namespace kernels

}  // namespace keel::cpu
