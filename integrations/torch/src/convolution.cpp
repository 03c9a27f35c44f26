// Convolutions of privateuseone: PyTorch sends every convolution of a
// device it does not know to convolution_overrideable and its backward;
// keel runs them as the CPU would (at::convolution on host mirrors).
#include "fallback.hpp"

#include <ATen/ATen.h>
#include <torch/library.h>

namespace keel_torch {

namespace {

using torch::jit::Stack;

// convolution_overrideable(input, weight, bias?, stride, padding, dilation,
// transposed, output_padding, groups)
void convolution(const c10::OperatorHandle& op, Stack* stack) {
    run_on_host(op, stack, [](Stack* s) {
        auto args = torch::jit::last(*s, 9);
        at::Tensor out = at::convolution(args[0].toTensor(), args[1].toTensor(), args[2].toOptional<at::Tensor>(),
                                         args[3].toIntVector(), args[4].toIntVector(), args[5].toIntVector(),
                                         args[6].toBool(), args[7].toIntVector(), args[8].toInt());
        torch::jit::drop(*s, 9);
        torch::jit::push(*s, std::move(out));
    });
}

// convolution_backward_overrideable(grad_output, input, weight, stride,
// padding, dilation, transposed, output_padding, groups, output_mask)
void convolution_backward(const c10::OperatorHandle& op, Stack* stack) {
    run_on_host(op, stack, [](Stack* s) {
        auto args = torch::jit::last(*s, 10);
        const at::Tensor weight = args[2].toTensor();
        const bool transposed = args[6].toBool();
        const std::int64_t groups = args[8].toInt();
        const c10::List<bool> mask_list = args[9].toBoolList();
        const std::array<bool, 3> mask{mask_list[0], mask_list[1], mask_list[2]};
        // The bias's length, needed only for its gradient.
        const std::vector<std::int64_t> bias_sizes{transposed ? weight.size(1) * groups : weight.size(0)};
        auto [grad_input, grad_weight, grad_bias] = at::convolution_backward(
            args[0].toTensor(), args[1].toTensor(), weight,
            mask[2] ? at::OptionalIntArrayRef(bias_sizes) : at::OptionalIntArrayRef(c10::nullopt),
            args[3].toIntVector(), args[4].toIntVector(), args[5].toIntVector(), transposed,
            args[7].toIntVector(), groups, mask);
        torch::jit::drop(*s, 10);
        torch::jit::push(*s, std::move(grad_input), std::move(grad_weight), std::move(grad_bias));
    });
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
    m.impl("convolution_overrideable", torch::CppFunction::makeFromBoxedFunction<&convolution>());
    m.impl("convolution_backward_overrideable", torch::CppFunction::makeFromBoxedFunction<&convolution_backward>());
}

}  // namespace keel_torch
