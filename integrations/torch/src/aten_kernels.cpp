// The aten kernels of privateuseone that keel runs itself: tensor creation,
// copies (Stream::copy), views, resize, fill and zero, add/sub as axpy, and
// record_stream. Every other operator goes to the CPU fallback
// (fallback.cpp); a kernel here whose case keel has no kernel for (another
// dtype, a strided layout) calls that fallback itself.
#include "errors.hpp"
#include "fallback.hpp"
#include "kernel_launch.hpp"
#include "tensors.hpp"

#include <ATen/ATen.h>
#include <ATen/EmptyTensor.h>
#include <ATen/Operators.h>
#include <ATen/native/CPUFallback.h>
#include <ATen/ops/_reshape_alias_native.h>
#include <ATen/ops/as_strided_native.h>
#include <ATen/ops/unfold_native.h>
#include <ATen/ops/view_native.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <algorithm>
#include <cstddef>
#include <optional>
#include <span>
#include <utility>

namespace keel_torch {

keel::DeviceView view_of(const at::Tensor& t) {
    check_data_known(t.storage());
    const auto address = reinterpret_cast<std::uintptr_t>(t.data_ptr());
    return {keel_device_of(t).device(), address, static_cast<std::uint64_t>(t.numel()) * t.element_size()};
}

std::optional<keel_dtype> keel_dtype_of(at::ScalarType type) {
    switch (type) {
        case at::kFloat: return KEEL_DTYPE_F32;
        case at::kDouble: return KEEL_DTYPE_F64;
        case at::kHalf: return KEEL_DTYPE_F16;
        case at::kBFloat16: return KEEL_DTYPE_BF16;
        default: return std::nullopt;
    }
}

at::Tensor empty_keel(at::IntArrayRef sizes, at::ScalarType type, c10::DeviceIndex index) {
    return at::empty(sizes, at::TensorOptions().dtype(type).device(c10::DeviceType::PrivateUse1, index));
}

namespace {

at::IntArrayRef ints(c10::SymIntArrayRef values) {
#ifdef C10_AS_INTARRAYREF_SLOW
    return C10_AS_INTARRAYREF_SLOW(values);
#else
    return c10::asIntArrayRefSlow(values);
#endif
}

const keel::Stream& stream_of(const at::Tensor& t) { return current_keel_stream(t.device().index()); }

// The storage elements a strided tensor (numel > 0) touches: [first, end).
std::pair<std::int64_t, std::int64_t> extent(const at::Tensor& t) {
    std::int64_t end = t.storage_offset() + 1;
    for (std::int64_t d = 0; d < t.dim(); ++d) end += (t.size(d) - 1) * t.stride(d);
    return {t.storage_offset(), end};
}

// Storage elements [first, end) of t as a keel view.
keel::DeviceView storage_view(const at::Tensor& t, std::int64_t first, std::int64_t end) {
    check_data_known(t.storage());
    const auto base = reinterpret_cast<std::uintptr_t>(t.storage().data());
    const auto item = static_cast<std::uint64_t>(t.element_size());
    return {keel_device_of(t).device(), base + static_cast<std::uint64_t>(first) * item,
            static_cast<std::uint64_t>(end - first) * item};
}

std::span<std::byte> bytes_of(const at::Tensor& host) {
    return {static_cast<std::byte*>(host.data_ptr()), host.nbytes()};
}

// Device -> host into a contiguous CPU tensor; returns once the data is there.
void download_into(const at::Tensor& host, const keel::Stream& stream, keel::DeviceView from) {
    keel::HostCopy copy = unwrap(stream.copy(bytes_of(host), from));
    unwrap(copy.wait());
}

// A contiguous CPU tensor with the values of the keel tensor t.
at::Tensor download(const at::Tensor& t) {
    at::Tensor host = at::empty(t.sizes(), t.options().device(c10::kCPU));
    if (t.numel() == 0) return host;
    if (t.is_contiguous()) {
        download_into(host, stream_of(t), view_of(t));
        return host;
    }
    const auto [first, end] = extent(t);
    at::Tensor storage = at::empty({end - first}, t.options().device(c10::kCPU));
    download_into(storage, stream_of(t), storage_view(t, first, end));
    return storage.as_strided(t.sizes(), t.strides(), t.storage_offset() - first).contiguous();
}

// The pinned buffer a contiguous CPU tensor fills entirely, if any.
std::shared_ptr<keel::PinnedBuffer> whole_pinned_buffer(const at::Tensor& host) {
    if (!host.has_storage() || host.storage_offset() != 0 || !host.is_contiguous()) return nullptr;
    auto pinned = pinned_buffer_of(host.storage().data_ptr());
    if (pinned == nullptr || pinned->size() != host.nbytes()) return nullptr;
    return pinned;
}

// Host -> device: dst <- host (any dtype and strides, broadcast to dst).
void upload(const at::Tensor& dst, const at::Tensor& host_src, bool non_blocking) {
    at::Tensor host = host_src.to(dst.scalar_type());
    if (host.sizes() != dst.sizes()) host = host.expand(dst.sizes());
    const keel::Stream& stream = stream_of(dst);
    if (dst.is_contiguous()) {
        host = host.contiguous();
        if (non_blocking) {
            if (auto pinned = whole_pinned_buffer(host)) {
                // Read when the copy runs: the buffer stays alive until then.
                unwrap(stream.copy(view_of(dst), *pinned));
                unwrap(stream.hold(std::move(pinned)));
                return;
            }
        }
        unwrap(stream.copy(view_of(dst), std::span<const std::byte>(bytes_of(host))));  // staged
        return;
    }
    // A strided destination: read-modify-write of the storage it spans.
    const auto [first, end] = extent(dst);
    at::Tensor storage = at::empty({end - first}, dst.options().device(c10::kCPU));
    download_into(storage, stream, storage_view(dst, first, end));
    storage.as_strided(dst.sizes(), dst.strides(), dst.storage_offset() - first).copy_(host);
    unwrap(stream.copy(storage_view(dst, first, end), std::span<const std::byte>(bytes_of(storage))));
}

}  // namespace

bool writes_whole_storage(const at::Tensor& t) {
    return t.is_non_overlapping_and_dense() &&
           static_cast<std::size_t>(t.numel()) * t.element_size() == t.storage().nbytes();
}

namespace {

bool overlap(const at::Tensor& a, const at::Tensor& b) {
    const auto a0 = reinterpret_cast<std::uintptr_t>(a.data_ptr());
    const auto b0 = reinterpret_cast<std::uintptr_t>(b.data_ptr());
    return a0 < b0 + b.nbytes() && b0 < a0 + a.nbytes();
}

}  // namespace

// The values src stands for, in a host tensor without conj/neg bits.
static at::Tensor host_values(const at::Tensor& src) {
    if (!is_keel(src)) return src.resolve_conj().resolve_neg();
    at::Tensor host = download(src);  // the stored values
    if (src.is_conj()) host = host.conj_physical();
    if (src.is_neg()) host = host.neg();
    return host;
}

namespace {

void copy_values(const at::Tensor& dst, const at::Tensor& src, bool non_blocking);

}  // namespace

void copy_between(const at::Tensor& dst, const at::Tensor& src, bool non_blocking) {
    if (dst.numel() == 0) return;
    // Both keel devices, in index order (two threads copying each way).
    std::optional<DeviceUse> first, second;
    const c10::DeviceIndex a = is_keel(dst) ? dst.device().index() : src.device().index();
    const c10::DeviceIndex b = is_keel(src) ? src.device().index() : a;
    first.emplace(torch_device(std::min(a, b)));
    if (a != b) second.emplace(torch_device(std::max(a, b)));
    if (!is_keel(dst) || !writes_whole_storage(dst)) {
        copy_values(dst, src, non_blocking);
        return;
    }
    // src first: it may share dst's storage, which the write makes known.
    if (is_keel(src)) check_data_known(src.storage());
    WholeWrite whole(dst.storage());
    copy_values(dst, src, non_blocking);
    whole.commit();
}

namespace {

void copy_values(const at::Tensor& dst, const at::Tensor& src, bool non_blocking) {
    if (src.is_conj() || src.is_neg() || dst.is_conj() || dst.is_neg()) {
        // Values, not bits, as CUDA's copy: dst then reads as src's values.
        at::Tensor values = host_values(src);
        if (!is_keel(dst)) {
            dst.copy_(values);  // the host copy applies dst's own bits
            return;
        }
        if (dst.is_conj()) values = values.conj_physical();
        if (dst.is_neg()) values = values.neg();
        upload(dst, values, false);  // the bytes dst stores
        return;
    }
    if (is_keel(src) && is_keel(dst)) {
        if (src.device() == dst.device() && src.scalar_type() == dst.scalar_type() && src.sizes() == dst.sizes() &&
            src.is_contiguous() && dst.is_contiguous() && !overlap(src, dst)) {
            unwrap(stream_of(dst).copy(view_of(dst), view_of(src)));  // on the device, on the stream
            return;
        }
        if (src.device() != dst.device() && src.scalar_type() == dst.scalar_type() && src.sizes() == dst.sizes() &&
            src.is_contiguous() && dst.is_contiguous()) {
            // Between two keel devices (keel:0 -> keel:1), on the devices:
            // the copy runs on dst's stream after src's producers, and src's
            // stream, where src is freed, waits for the copy (as PyTorch's
            // CUDA copy between devices does). keel picks the path
            // (keel::copy_path: a peer copy, or staged through pinned memory).
            const keel::Stream& to = stream_of(dst);
            const keel::Stream& from = stream_of(src);
            unwrap(to.order_after(from));
            unwrap(to.copy(view_of(dst), view_of(src)));
            unwrap(from.order_after(to));
            return;
        }
        upload(dst, download(src), false);
        return;
    }
    if (is_keel(dst)) {
        upload(dst, src, non_blocking);
        return;
    }
    TORCH_CHECK(is_keel(src), "[keel_torch] copy between two non-keel tensors");
    if (src.is_contiguous() && dst.is_contiguous() && src.scalar_type() == dst.scalar_type() &&
        src.sizes() == dst.sizes()) {
        const keel::Stream& stream = stream_of(src);
        if (non_blocking) {
            if (auto pinned = whole_pinned_buffer(dst)) {
                // PyTorch's contract: the host reads it after synchronising.
                unwrap(stream.copy(*pinned, view_of(src)));
                unwrap(stream.hold(std::move(pinned)));
                return;
            }
        }
        download_into(dst, stream, view_of(src));
        return;
    }
    dst.copy_(download(src));
}

at::Tensor empty_memory_format(c10::SymIntArrayRef size, c10::optional<at::ScalarType> dtype,
                               c10::optional<at::Layout> layout, c10::optional<at::Device> device,
                               c10::optional<bool> pin_memory, c10::optional<at::MemoryFormat> memory_format) {
    TORCH_CHECK(!pin_memory.value_or(false), "[keel_torch] pin_memory applies to CPU tensors only");
    TORCH_CHECK(layout.value_or(at::kStrided) == at::kStrided, "[keel_torch] only strided tensors");
    const c10::OptionalDeviceGuard guard(device);
    constexpr c10::DispatchKeySet keys(c10::DispatchKey::PrivateUse1);
    return at::detail::empty_generic(ints(size), device_allocator(), keys, c10::dtype_or_default(dtype),
                                     memory_format);
}

at::Tensor empty_strided(c10::SymIntArrayRef size, c10::SymIntArrayRef stride, c10::optional<at::ScalarType> dtype,
                         c10::optional<at::Layout> layout, c10::optional<at::Device> device,
                         c10::optional<bool> pin_memory) {
    TORCH_CHECK(!pin_memory.value_or(false), "[keel_torch] pin_memory applies to CPU tensors only");
    TORCH_CHECK(layout.value_or(at::kStrided) == at::kStrided, "[keel_torch] only strided tensors");
    const c10::OptionalDeviceGuard guard(device);
    constexpr c10::DispatchKeySet keys(c10::DispatchKey::PrivateUse1);
    return at::detail::empty_strided_generic(ints(size), ints(stride), device_allocator(), keys,
                                             c10::dtype_or_default(dtype));
}

at::Tensor& copy_(at::Tensor& self, const at::Tensor& src, bool non_blocking) {
    copy_between(self, src, non_blocking);
    return self;
}

at::Tensor copy_from(const at::Tensor& self, const at::Tensor& dst, bool non_blocking) {
    copy_between(dst, self, non_blocking);
    return dst;
}

const at::Tensor& resize_(const at::Tensor& self, c10::SymIntArrayRef size,
                          c10::optional<at::MemoryFormat> memory_format);

at::Tensor copy_from_and_resize(const at::Tensor& self, const at::Tensor& dst) {
    if (dst.sizes() != self.sizes()) {
        if (is_keel(dst))
            resize_(dst, c10::fromIntArrayRef(self.sizes()), c10::nullopt);
        else
            dst.resize_(self.sizes());
    }
    copy_between(dst, self, false);
    return dst;
}

at::Tensor view(const at::Tensor& self, c10::SymIntArrayRef size) { return at::native::view(self, ints(size)); }

at::Tensor as_strided(const at::Tensor& self, c10::SymIntArrayRef size, c10::SymIntArrayRef stride,
                      c10::optional<c10::SymInt> storage_offset) {
    const c10::optional<std::int64_t> offset =
        storage_offset ? c10::optional<std::int64_t>(storage_offset->expect_int()) : c10::nullopt;
    return at::native::as_strided_tensorimpl(self, ints(size), ints(stride), offset);
}

at::Tensor reshape_alias(const at::Tensor& self, c10::SymIntArrayRef size, c10::SymIntArrayRef stride) {
    return at::native::_reshape_alias(self, ints(size), ints(stride));
}

at::Tensor unfold(const at::Tensor& self, std::int64_t dimension, std::int64_t size, std::int64_t step) {
    return at::native::unfold(self, dimension, size, step);
}

// Grows the storage (new keel memory, old bytes copied on the device) when
// the new shape needs more; like every resize, never shrinks it.
const at::Tensor& resize_(const at::Tensor& self, c10::SymIntArrayRef size,
                          c10::optional<at::MemoryFormat> memory_format) {
    const at::IntArrayRef sizes = ints(size);
    self.unsafeGetTensorImpl()->set_sizes_contiguous(sizes);
    const std::size_t needed =
        at::detail::computeStorageNbytesContiguous(sizes, self.element_size(), self.storage_offset());
    const c10::Storage& storage = self.storage();
    if (needed > storage.nbytes()) {
        c10::DataPtr fresh = allocate_device(self.device().index(), needed);
        inherit_data_state(fresh, storage.data_ptr());
        if (storage.nbytes() > 0) {
            const TorchDevice& device = keel_device_of(self);
            const keel::DeviceView from(device.device(), reinterpret_cast<std::uintptr_t>(storage.data()),
                                        storage.nbytes());
            const keel::DeviceView to(device.device(), reinterpret_cast<std::uintptr_t>(fresh.get()),
                                      storage.nbytes());
            unwrap(stream_of(self).copy(to, from));
        }
        storage.set_data_ptr_noswap(std::move(fresh));
        storage.set_nbytes(needed);
    }
    if (memory_format) self.unsafeGetTensorImpl()->empty_tensor_restride(*memory_format);
    return self;
}

at::Tensor& fill_values(at::Tensor& self, const at::Scalar& value);

at::Tensor& fill_(at::Tensor& self, const at::Scalar& value) {
    const DeviceUse use(keel_device_of(self));
    if (self.numel() == 0 || !writes_whole_storage(self)) return fill_values(self, value);
    WholeWrite whole(self.storage());
    fill_values(self, value);
    whole.commit();
    return self;
}

at::Tensor& fill_values(at::Tensor& self, const at::Scalar& value) {
    if (self.numel() == 0) return self;
    if (self.scalar_type() == at::kFloat && self.is_contiguous() && !value.isComplex()) {
        const keel::KernelArgs args = keel::KernelArgs().buffer(view_of(self), KEEL_DTYPE_F32).scalar(value.toFloat());
        if (launch_if_served(self, "fill", args)) return self;
    }
    return at::native::call_fallback_fn<&cpu_fallback, at::_ops::fill__Scalar>::call(self, value);
}

at::Tensor& zero_(at::Tensor& self) {
    if (self.numel() == 0) return self;
    const DeviceUse use(keel_device_of(self));
    if (self.is_non_overlapping_and_dense()) {
        // A dense tensor spans exactly numel elements from its first one,
        // whatever the order of its strides.
        std::optional<WholeWrite> whole;
        if (writes_whole_storage(self)) whole.emplace(self.storage());
        unwrap(stream_of(self).memset(view_of(self), 0));
        if (whole) whole->commit();
        return self;
    }
    return at::native::call_fallback_fn<&cpu_fallback, at::_ops::zero_>::call(self);
}

// Whether y += alpha * x is keel's axpy: f32, one device, same shape,
// contiguous (in place: x not overlapping y).
bool is_axpy(const at::Tensor& y, const at::Tensor& x, const at::Scalar& alpha, bool in_place) {
    return is_keel(y) && is_keel(x) && y.device() == x.device() && y.scalar_type() == at::kFloat &&
           x.scalar_type() == at::kFloat && y.sizes() == x.sizes() && y.numel() > 0 && y.is_contiguous() &&
           x.is_contiguous() && !(in_place && overlap(x, y)) && !alpha.isComplex();
}

bool axpy(const at::Tensor& y, const at::Tensor& x, float alpha) {
    const DeviceUse use(keel_device_of(y));
    const keel::KernelArgs args =
        keel::KernelArgs().scalar(alpha).buffer(view_of(x), KEEL_DTYPE_F32).buffer(view_of(y), KEEL_DTYPE_F32);
    return launch_if_served(y, "axpy", args);
}

at::Tensor& add_(at::Tensor& self, const at::Tensor& other, const at::Scalar& alpha) {
    if (is_axpy(self, other, alpha, true) && axpy(self, other, alpha.toFloat())) return self;
    return at::native::call_fallback_fn<&cpu_fallback, at::_ops::add__Tensor>::call(self, other, alpha);
}

at::Tensor& sub_(at::Tensor& self, const at::Tensor& other, const at::Scalar& alpha) {
    if (is_axpy(self, other, alpha, true) && axpy(self, other, -alpha.toFloat())) return self;
    return at::native::call_fallback_fn<&cpu_fallback, at::_ops::sub__Tensor>::call(self, other, alpha);
}

// out = self + alpha * other: a copy of self on the device, then axpy.
at::Tensor add(const at::Tensor& self, const at::Tensor& other, const at::Scalar& alpha) {
    if (is_axpy(self, other, alpha, false)) {
        at::Tensor out = empty_keel(self.sizes(), at::kFloat, self.device().index());
        copy_between(out, self, false);
        if (axpy(out, other, alpha.toFloat())) return out;
    }
    return at::native::call_fallback_fn<&cpu_fallback, at::_ops::add_Tensor>::call(self, other, alpha);
}

at::Tensor sub(const at::Tensor& self, const at::Tensor& other, const at::Scalar& alpha) {
    if (is_axpy(self, other, alpha, false)) {
        at::Tensor out = empty_keel(self.sizes(), at::kFloat, self.device().index());
        copy_between(out, self, false);
        if (axpy(out, other, -alpha.toFloat())) return out;
    }
    return at::native::call_fallback_fn<&cpu_fallback, at::_ops::sub_Tensor>::call(self, other, alpha);
}

// self becomes a view of `source` (keel memory; no device work). A storage
// too small for the view is grown as resize_ grows it.
at::Tensor& set_storage(at::Tensor& self, c10::Storage source, c10::SymInt storage_offset, c10::SymIntArrayRef size,
                        c10::SymIntArrayRef stride) {
    TORCH_CHECK(source.device().type() == c10::DeviceType::PrivateUse1 || source.nbytes() == 0,
                "[keel_torch] set_: the storage is on ", source.device(), ", the tensor on ", self.device());
    const std::int64_t offset = storage_offset.expect_int();
    TORCH_CHECK(offset >= 0, "[keel_torch] set_: negative storage offset ", offset);
    at::TensorImpl* impl = self.unsafeGetTensorImpl();
    impl->set_storage_keep_dtype(std::move(source));
    impl->set_storage_offset(offset);
    const at::IntArrayRef sizes = ints(size);
    if (stride.empty()) {
        impl->set_sizes_contiguous(sizes);
    } else {
        impl->set_sizes_and_strides(sizes, ints(stride));
    }
    if (self.numel() > 0) {
        const auto [first, end] = extent(self);
        TORCH_CHECK(static_cast<std::size_t>(end) * self.element_size() <= self.storage().nbytes(),
                    "[keel_torch] set_: the view needs ", end * self.element_size(), " bytes, the storage has ",
                    self.storage().nbytes());
    }
    return self;
}

at::Tensor& set_source_storage(at::Tensor& self, c10::Storage source) {
    const auto items = static_cast<std::int64_t>(source.nbytes() / self.element_size());
    return set_storage(self, std::move(source), 0, c10::fromIntArrayRef({items}), {});
}

at::Tensor& set_source_tensor(at::Tensor& self, const at::Tensor& source) {
    if (self.is_same(source)) return self;
    return set_storage(self, source.storage(), source.storage_offset(), c10::fromIntArrayRef(source.sizes()),
                       c10::fromIntArrayRef(source.strides()));
}

at::Tensor& set_empty(at::Tensor& self) {
    c10::Storage empty(c10::Storage::use_byte_size_t(), 0, allocate_device(self.device().index(), 0),
                       device_allocator(), true);
    return set_storage(self, std::move(empty), 0, c10::fromIntArrayRef({0}), {});
}

void record_stream(at::Tensor& self, c10::Stream stream) {
    record_data_on_stream(self.storage().data_ptr(), stream);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
    m.impl("empty.memory_format", TORCH_FN(empty_memory_format));
    m.impl("empty_strided", TORCH_FN(empty_strided));
    m.impl("copy_", TORCH_FN(copy_));
    m.impl("_copy_from", TORCH_FN(copy_from));
    m.impl("_copy_from_and_resize", TORCH_FN(copy_from_and_resize));
    m.impl("view", TORCH_FN(view));
    m.impl("as_strided", TORCH_FN(as_strided));
    m.impl("_reshape_alias", TORCH_FN(reshape_alias));
    m.impl("unfold", TORCH_FN(unfold));
    m.impl("resize_", TORCH_FN(resize_));
    m.impl("fill_.Scalar", TORCH_FN(fill_));
    m.impl("zero_", TORCH_FN(zero_));
    m.impl("add.Tensor", TORCH_FN(add));
    m.impl("add_.Tensor", TORCH_FN(add_));
    m.impl("sub.Tensor", TORCH_FN(sub));
    m.impl("sub_.Tensor", TORCH_FN(sub_));
    m.impl("set_.source_Storage_storage_offset", TORCH_FN(set_storage));
    m.impl("set_.source_Storage", TORCH_FN(set_source_storage));
    m.impl("set_.source_Tensor", TORCH_FN(set_source_tensor));
    m.impl("set_", TORCH_FN(set_empty));
    m.impl("record_stream", TORCH_FN(record_stream));
}

}  // namespace keel_torch
