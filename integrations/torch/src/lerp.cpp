// torch.lerp on keel: the forward through keel's `lerp` kernel (NumPy
// broadcasting among self, end and weight), and, for the autograd key of
// privateuseone, a backward through `lerp_grad`, which reduces the gradients
// of broadcast inputs without materialising them (docs/kernels.md). Cases
// keel has no kernel for go to the CPU fallback (forward) or to ATen ops
// (backward).
#include "errors.hpp"
#include "fallback.hpp"
#include "kernel_launch.hpp"
#include "tensors.hpp"

#include <ATen/ATen.h>
#include <ATen/ExpandUtils.h>
#include <ATen/Operators.h>
#include <ATen/native/CPUFallback.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/library.h>

#include <variant>

namespace keel_torch {

namespace {

using Weight = std::variant<at::Tensor, double>;

bool is_float(const at::Tensor& t, at::ScalarType type) { return t.scalar_type() == type && t.is_contiguous(); }

std::vector<std::int64_t> broadcast_shape(const at::Tensor& x, const at::Tensor& y, const Weight& w) {
    std::vector<std::int64_t> shape = at::infer_size(x.sizes(), y.sizes());
    if (const auto* tensor = std::get_if<at::Tensor>(&w)) shape = at::infer_size(shape, tensor->sizes());
    return shape;
}

// Whether keel's lerp kernels take these operands: all on out's keel
// device, contiguous, of one floating dtype keel knows.
bool lerp_operands_fit(const at::Tensor& out, std::initializer_list<const at::Tensor*> operands) {
    if (!keel_dtype_of(out.scalar_type()) || !is_keel(out) || !out.is_contiguous()) return false;
    return std::all_of(operands.begin(), operands.end(), [&](const at::Tensor* t) {
        return is_keel(*t) && t->device() == out.device() && is_float(*t, out.scalar_type());
    });
}

keel::KernelArgs& add_weight(keel::KernelArgs& args, const Weight& w, keel_dtype dtype) {
    if (const auto* tensor = std::get_if<at::Tensor>(&w)) return args.buffer(view_of(*tensor), dtype);
    return args.scalar(std::get<double>(w));
}

at::IntArrayRef weight_shape(const Weight& w) {
    if (const auto* tensor = std::get_if<at::Tensor>(&w)) return tensor->sizes();
    return {};
}

// out <- lerp(x, y, w) on the device; false when keel has no kernel for it.
bool lerp_on_device(const at::Tensor& out, const at::Tensor& x, const at::Tensor& y, const Weight& w) {
    const auto* w_tensor = std::get_if<at::Tensor>(&w);
    if (out.numel() == 0) return true;
    if (!(w_tensor ? lerp_operands_fit(out, {&x, &y, w_tensor}) : lerp_operands_fit(out, {&x, &y}))) return false;
    const keel_dtype dtype = *keel_dtype_of(out.scalar_type());
    const DeviceUse use(keel_device_of(out));
    keel::KernelArgs args;
    args.buffer(view_of(x), dtype).buffer(view_of(y), dtype);
    add_weight(args, w, dtype)
        .buffer(view_of(out), dtype)
        .ints(x.sizes())
        .ints(y.sizes())
        .ints(weight_shape(w))
        .ints(out.sizes());
    return launch_if_served(out, "lerp", args);
}

at::Tensor lerp_tensor(const at::Tensor& self, const at::Tensor& end, const at::Tensor& weight) {
    at::Tensor out = empty_keel(broadcast_shape(self, end, weight), self.scalar_type(), self.device().index());
    if (lerp_on_device(out, self, end, weight)) return out;
    return at::native::call_fallback_fn<&cpu_fallback, at::_ops::lerp_Tensor>::call(self, end, weight);
}

at::Tensor lerp_scalar(const at::Tensor& self, const at::Tensor& end, const at::Scalar& weight) {
    if (!weight.isComplex()) {
        at::Tensor out = empty_keel(broadcast_shape(self, end, weight.toDouble()), self.scalar_type(),
                                    self.device().index());
        if (lerp_on_device(out, self, end, weight.toDouble())) return out;
    }
    return at::native::call_fallback_fn<&cpu_fallback, at::_ops::lerp_Scalar>::call(self, end, weight);
}

at::Tensor& lerp_tensor_(at::Tensor& self, const at::Tensor& end, const at::Tensor& weight) {
    if (broadcast_shape(self, end, weight) == self.sizes() && lerp_on_device(self, self, end, weight)) return self;
    return at::native::call_fallback_fn<&cpu_fallback, at::_ops::lerp__Tensor>::call(self, end, weight);
}

at::Tensor& lerp_scalar_(at::Tensor& self, const at::Tensor& end, const at::Scalar& weight) {
    if (!weight.isComplex() && broadcast_shape(self, end, weight.toDouble()) == self.sizes() &&
        lerp_on_device(self, self, end, weight.toDouble()))
        return self;
    return at::native::call_fallback_fn<&cpu_fallback, at::_ops::lerp__Scalar>::call(self, end, weight);
}

// The gradients of x and y (each undefined when not wanted): keel's
// lerp_grad in one pass over dout where it fits, else ATen ops.
std::pair<at::Tensor, at::Tensor> lerp_grads(const at::Tensor& dout_in, at::IntArrayRef x_shape,
                                             at::IntArrayRef y_shape, const Weight& w, bool want_dx,
                                             bool want_dy) {
    const at::Tensor dout = dout_in.contiguous();
    if (dout.numel() == 0) {  // a sum over nothing
        return {want_dx ? at::zeros(x_shape, dout.options()) : at::Tensor(),
                want_dy ? at::zeros(y_shape, dout.options()) : at::Tensor()};
    }
    const auto* w_tensor = std::get_if<at::Tensor>(&w);
    if (w_tensor ? lerp_operands_fit(dout, {w_tensor}) : lerp_operands_fit(dout, {})) {
        const keel_dtype dtype = *keel_dtype_of(dout.scalar_type());
        const c10::DeviceIndex index = dout.device().index();
        at::Tensor dx = want_dx ? empty_keel(x_shape, dout.scalar_type(), index) : at::Tensor();
        at::Tensor dy = want_dy ? empty_keel(y_shape, dout.scalar_type(), index) : at::Tensor();
        const DeviceUse use(keel_device_of(dout));
        keel::KernelArgs args;
        args.absent(dtype).absent(dtype);
        add_weight(args, w, dtype).buffer(view_of(dout), dtype);
        if (want_dx) args.buffer(view_of(dx), dtype); else args.absent(dtype);
        if (want_dy) args.buffer(view_of(dy), dtype); else args.absent(dtype);
        args.ints(x_shape).ints(y_shape).ints(weight_shape(w)).ints(dout.sizes());
        if (launch_if_served(dout, "lerp_grad", args)) return {dx, dy};
    }
    at::Tensor dx, dy;
    if (const auto* t = std::get_if<at::Tensor>(&w)) {
        if (want_dx) dx = at::sum_to(dout * (1 - *t), x_shape);
        if (want_dy) dy = at::sum_to(dout * *t, y_shape);
    } else {
        const double s = std::get<double>(w);
        if (want_dx) dx = at::sum_to(dout * (1 - s), x_shape);
        if (want_dy) dy = at::sum_to(dout * s, y_shape);
    }
    return {dx, dy};
}

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// lerp(self, end, weight tensor) with keel's backward.
class LerpTensor : public torch::autograd::Function<LerpTensor> {
public:
    static at::Tensor forward(AutogradContext* ctx, const at::Tensor& self, const at::Tensor& end,
                              const at::Tensor& weight) {
        ctx->saved_data["dx"] = self.requires_grad();
        ctx->saved_data["dy"] = end.requires_grad();
        ctx->saved_data["dw"] = weight.requires_grad();
        ctx->save_for_backward({self, end, weight});
        at::AutoDispatchBelowADInplaceOrView below_autograd;
        return at::lerp(self, end, weight);
    }
    static variable_list backward(AutogradContext* ctx, variable_list grads) {
        const variable_list saved = ctx->get_saved_variables();
        const at::Tensor &x = saved[0], &y = saved[1], &w = saved[2];
        auto [dx, dy] = lerp_grads(grads[0], x.sizes(), y.sizes(), w, ctx->saved_data["dx"].toBool(),
                                   ctx->saved_data["dy"].toBool());
        at::Tensor dw = ctx->saved_data["dw"].toBool() ? at::sum_to(grads[0] * (y - x), w.sizes()) : at::Tensor();
        return {dx, dy, dw};
    }
};

// lerp(self, end, scalar weight) with keel's backward.
class LerpScalar : public torch::autograd::Function<LerpScalar> {
public:
    static at::Tensor forward(AutogradContext* ctx, const at::Tensor& self, const at::Tensor& end,
                              const at::Scalar& weight) {
        ctx->saved_data["dx"] = self.requires_grad();
        ctx->saved_data["dy"] = end.requires_grad();
        ctx->saved_data["weight"] = weight;
        ctx->saved_data["x_shape"] = self.sizes().vec();
        ctx->saved_data["y_shape"] = end.sizes().vec();
        at::AutoDispatchBelowADInplaceOrView below_autograd;
        return at::lerp(self, end, weight);
    }
    static variable_list backward(AutogradContext* ctx, variable_list grads) {
        const at::Scalar weight = ctx->saved_data["weight"].toScalar();
        TORCH_CHECK(!weight.isComplex(), "[keel_torch] lerp backward: complex weights are not supported");
        const std::vector<std::int64_t> x_shape = ctx->saved_data["x_shape"].toIntVector();
        const std::vector<std::int64_t> y_shape = ctx->saved_data["y_shape"].toIntVector();
        auto [dx, dy] = lerp_grads(grads[0], x_shape, y_shape, weight.toDouble(), ctx->saved_data["dx"].toBool(),
                                   ctx->saved_data["dy"].toBool());
        return {dx, dy, at::Tensor()};
    }
};

at::Tensor lerp_tensor_autograd(const at::Tensor& self, const at::Tensor& end, const at::Tensor& weight) {
    return LerpTensor::apply(self, end, weight);
}

at::Tensor lerp_scalar_autograd(const at::Tensor& self, const at::Tensor& end, const at::Scalar& weight) {
    return LerpScalar::apply(self, end, weight);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
    m.impl("lerp.Tensor", TORCH_FN(lerp_tensor));
    m.impl("lerp.Scalar", TORCH_FN(lerp_scalar));
    m.impl("lerp_.Tensor", TORCH_FN(lerp_tensor_));
    m.impl("lerp_.Scalar", TORCH_FN(lerp_scalar_));
}

TORCH_LIBRARY_IMPL(aten, AutogradPrivateUse1, m) {
    m.impl("lerp.Tensor", TORCH_FN(lerp_tensor_autograd));
    m.impl("lerp.Scalar", TORCH_FN(lerp_scalar_autograd));
}

}  // namespace keel_torch
