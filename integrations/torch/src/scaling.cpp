// Elementwise operators keel runs with the kernels every device serves
// (fill and axpy), where the CPU fallback would cost two copies across the
// device boundary: multiplying by a host scalar (DDP divides every gradient
// bucket so), dividing by a power of two, and the foreach loops of
// optimizers over keel's own kernels. Other cases go to the fallback.
#include "errors.hpp"
#include "fallback.hpp"
#include "kernel_launch.hpp"
#include "tensors.hpp"

#include <ATen/ATen.h>
#include <ATen/Operators.h>
#include <ATen/native/CPUFallback.h>
#include <torch/library.h>

#include <cmath>
#include <optional>

namespace keel_torch {

namespace {

// The factor a host 0-dim tensor stands for in f32 arithmetic with an f32
// tensor of more dims (PyTorch's promotion keeps f32; the CPU kernel casts
// the scalar to f32): floating, or an integer f32 holds exactly.
std::optional<float> host_scalar(const at::Tensor& t) {
    if (!t.defined() || !t.device().is_cpu() || t.dim() != 0 || t.is_complex()) return std::nullopt;
    if (at::isFloatingType(t.scalar_type())) return static_cast<float>(t.item<double>());
    if (!at::isIntegralType(t.scalar_type(), /*includeBool=*/false)) return std::nullopt;
    const std::int64_t v = t.item<std::int64_t>();
    if (v > (1 << 24) || v < -(1 << 24)) return std::nullopt;
    return static_cast<float>(v);
}

std::optional<float> scalar_factor(const at::Scalar& s) {
    if (s.isComplex() || s.isBoolean()) return std::nullopt;
    if (s.isFloatingPoint()) return static_cast<float>(s.toDouble());
    const std::int64_t v = s.toLong();
    if (v > (1 << 24) || v < -(1 << 24)) return std::nullopt;
    return static_cast<float>(v);
}

// 1/s when dividing by s and multiplying by 1/s round alike: s a power of two.
std::optional<float> exact_reciprocal(std::optional<float> s) {
    if (!s || !std::isfinite(*s) || *s == 0.0f) return std::nullopt;
    int exponent = 0;
    if (std::abs(std::frexp(*s, &exponent)) != 0.5f) return std::nullopt;
    const float r = 1.0f / *s;
    if (!std::isfinite(r) || r * *s != 1.0f) return std::nullopt;
    return r;
}

bool f32_dense_keel(const at::Tensor& t) {
    return t.defined() && is_keel(t) && t.scalar_type() == at::kFloat && t.dim() > 0 && t.numel() > 0 &&
           t.is_contiguous() && !t.is_conj() && !t.is_neg();
}

bool same_bytes(const at::Tensor& a, const at::Tensor& b) {
    return a.data_ptr() == b.data_ptr() && a.nbytes() == b.nbytes();
}

bool bytes_overlap(const at::Tensor& a, const at::Tensor& b) {
    const auto a0 = reinterpret_cast<std::uintptr_t>(a.data_ptr());
    const auto b0 = reinterpret_cast<std::uintptr_t>(b.data_ptr());
    return a0 < b0 + b.nbytes() && b0 < a0 + a.nbytes();
}

// out = s * x as fill(out, -0.0) then axpy(s, x, out): -0.0 + p is p for
// every product p (-0.0 included), so out holds the CPU's f32 products bit
// for bit. x may be out itself (through a copy on the device). False when
// keel cannot (the caller falls back); an error once something was enqueued.
bool scale(const at::Tensor& out, const at::Tensor& x, float s) {
    if (!f32_dense_keel(out) || !f32_dense_keel(x) || out.device() != x.device() || out.sizes() != x.sizes())
        return false;
    const TorchDevice& device = keel_device_of(out);
    const DeviceUse use(device);
    if (!device.kernel("fill").ok() || !device.kernel("axpy").ok()) return false;
    at::Tensor source = x;
    if (bytes_overlap(out, x)) {
        if (!same_bytes(out, x)) return false;
        source = empty_keel(x.sizes(), at::kFloat, x.device().index());
        unwrap(current_keel_stream(x.device().index()).copy(view_of(source), view_of(x)));
    }
    if (!launch_if_served(out, "fill", keel::KernelArgs().buffer(view_of(out), KEEL_DTYPE_F32).scalar(-0.0f)))
        return false;
    const keel::KernelArgs axpy =
        keel::KernelArgs().scalar(s).buffer(view_of(source), KEEL_DTYPE_F32).buffer(view_of(out), KEEL_DTYPE_F32);
    TORCH_CHECK(launch_if_served(out, "axpy", axpy), "[keel_torch] ", device.device().name(),
                " ran fill but refused axpy for a scaling; the output is not written");
    return true;
}

at::Tensor& mul_out(const at::Tensor& self, const at::Tensor& other, at::Tensor& out) {
    if (const auto s = host_scalar(other); s && scale(out, self, *s)) return out;
    if (const auto s = host_scalar(self); s && scale(out, other, *s)) return out;
    return at::native::call_fallback_fn<&cpu_fallback, at::_ops::mul_out>::call(self, other, out);
}

at::Tensor& div_out(const at::Tensor& self, const at::Tensor& other, at::Tensor& out) {
    if (const auto r = exact_reciprocal(host_scalar(other)); r && scale(out, self, *r)) return out;
    return at::native::call_fallback_fn<&cpu_fallback, at::_ops::div_out>::call(self, other, out);
}

at::Tensor& mul_scalar_(at::Tensor& self, const at::Scalar& other) {
    if (const auto s = scalar_factor(other); s && scale(self, self, *s)) return self;
    return at::native::call_fallback_fn<&cpu_fallback, at::_ops::mul__Scalar>::call(self, other);
}

at::Tensor& div_scalar_(at::Tensor& self, const at::Scalar& other) {
    if (const auto r = exact_reciprocal(scalar_factor(other)); r && scale(self, self, *r)) return self;
    return at::native::call_fallback_fn<&cpu_fallback, at::_ops::div__Scalar>::call(self, other);
}

// The foreach operators as loops of keel kernels when every element allows
// it (as PyTorch's own CPU "slow path" loops); else one fallback for the list.
void foreach_zero_(at::TensorList self) {
    for (const at::Tensor& t : self) t.zero_();
}

void foreach_add_list_(at::TensorList self, at::TensorList other, const at::Scalar& alpha) {
    bool native = self.size() == other.size() && !alpha.isComplex();
    for (std::size_t i = 0; native && i < self.size(); ++i)
        native = f32_dense_keel(self[i]) && f32_dense_keel(other[i]) && self[i].device() == other[i].device() &&
                 self[i].sizes() == other[i].sizes() && !bytes_overlap(self[i], other[i]);
    if (!native) {
        at::native::call_fallback_fn<&cpu_fallback, at::_ops::_foreach_add__List>::call(self, other, alpha);
        return;
    }
    for (std::size_t i = 0; i < self.size(); ++i) self[i].add_(other[i], alpha);
}

void foreach_mul_scalar_(at::TensorList self, const at::Scalar& scalar) {
    bool native = scalar_factor(scalar).has_value();
    for (std::size_t i = 0; native && i < self.size(); ++i) native = f32_dense_keel(self[i]);
    if (!native) {
        at::native::call_fallback_fn<&cpu_fallback, at::_ops::_foreach_mul__Scalar>::call(self, scalar);
        return;
    }
    for (const at::Tensor& t : self) {
        at::Tensor target = t;
        mul_scalar_(target, scalar);
    }
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
    m.impl("mul.out", TORCH_FN(mul_out));
    m.impl("div.out", TORCH_FN(div_out));
    m.impl("mul_.Scalar", TORCH_FN(mul_scalar_));
    m.impl("div_.Scalar", TORCH_FN(div_scalar_));
    m.impl("_foreach_zero_", TORCH_FN(foreach_zero_));
    m.impl("_foreach_add_.List", TORCH_FN(foreach_add_list_));
    m.impl("_foreach_mul_.Scalar", TORCH_FN(foreach_mul_scalar_));
}

}  // namespace keel_torch
