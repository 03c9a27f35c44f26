#include <keel/kernel.hpp>

#include "access.hpp"
#include "plugin.hpp"

namespace keel {

Result<Kernel> Kernel::find(const Device& device, std::string_view name) {
    std::string n(name);
    keel_kernel handle = nullptr;
    KEEL_TRY(detail::Access::slot(device).api().kernel_get(detail::Access::handle(device), n.c_str(), &handle));
    if (handle == nullptr)
        return Error(KEEL_STATUS_INTERNAL, "[Kernel::find] " + device.name() +
                                               " kernel_get succeeded but returned no kernel '" +
                                               n + "'");
    return Kernel(device, handle, std::move(n));
}

KernelArgs& KernelArgs::push(Arg arg) {
    arg.c.struct_size = KEEL_KERNEL_ARG_STRUCT_SIZE;
    args_.push_back(std::move(arg));
    return *this;
}

KernelArgs& KernelArgs::buffer(DeviceView view, keel_dtype dtype) & {
    Arg a;
    a.c.kind = KEEL_ARG_BUFFER;
    a.c.dtype = dtype;
    a.c.value.buffer.addr = view.address();
    a.c.value.buffer.size = view.size();
    a.device = detail::Access::slot(view);
    a.empty_view = view.empty();
    return push(std::move(a));
}

KernelArgs& KernelArgs::absent(keel_dtype dtype) & {
    Arg a;
    a.c.kind = KEEL_ARG_BUFFER;
    a.c.dtype = dtype;
    return push(std::move(a));
}

namespace {
// A scalar argument of `dtype`; `set` writes the value into the C union.
template <class Set>
keel_kernel_arg scalar_arg(keel_dtype dtype, Set set) {
    keel_kernel_arg c{};
    c.kind = KEEL_ARG_SCALAR;
    c.dtype = dtype;
    set(c.value.scalar);
    return c;
}
}  // namespace

KernelArgs& KernelArgs::scalar(float v) & {
    return push(Arg{scalar_arg(KEEL_DTYPE_F32, [v](auto& s) { s.f32 = v; })});
}
KernelArgs& KernelArgs::scalar(double v) & {
    return push(Arg{scalar_arg(KEEL_DTYPE_F64, [v](auto& s) { s.f64 = v; })});
}
// Integers are widened into the 64-bit member, as keel.h reads them.
KernelArgs& KernelArgs::scalar(std::int32_t v) & {
    return push(Arg{scalar_arg(KEEL_DTYPE_I32, [v](auto& s) { s.i64 = v; })});
}
KernelArgs& KernelArgs::scalar(std::int64_t v) & {
    return push(Arg{scalar_arg(KEEL_DTYPE_I64, [v](auto& s) { s.i64 = v; })});
}
KernelArgs& KernelArgs::scalar(std::uint32_t v) & {
    return push(Arg{scalar_arg(KEEL_DTYPE_U32, [v](auto& s) { s.u64 = v; })});
}
KernelArgs& KernelArgs::scalar(std::uint64_t v) & {
    return push(Arg{scalar_arg(KEEL_DTYPE_U64, [v](auto& s) { s.u64 = v; })});
}
KernelArgs& KernelArgs::scalar_bits16(keel_dtype dtype, std::uint16_t bits) & {
    return push(Arg{scalar_arg(dtype, [bits](auto& s) { s.u64 = bits; })});
}

KernelArgs& KernelArgs::ints(std::initializer_list<std::int64_t> values) & {
    return ints(std::span<const std::int64_t>(values.begin(), values.size()));
}

KernelArgs& KernelArgs::ints(std::span<const std::int64_t> values) & {
    Arg a;
    a.c.kind = KEEL_ARG_INT_ARRAY;
    a.c.dtype = KEEL_DTYPE_I64;
    a.ints.assign(values.begin(), values.end());
    return push(std::move(a));
}

std::vector<keel_kernel_arg> KernelArgs::encode() const& {
    std::vector<keel_kernel_arg> out;
    out.reserve(args_.size());
    for (std::size_t i = 0; i < args_.size(); ++i) out.push_back(detail::Access::encoded(*this, i));
    return out;
}

}  // namespace keel
