// kernel_get / kernel_launch and a kernel's execution on the worker.
#include "device.hpp"
#include "checker/checker.hpp"
#include "entries.hpp"
#include "execute.hpp"
#include "kernel_registry.hpp"
#include "stream.hpp"

#include <keel/plugin/boundary.hpp>

#include <algorithm>
#include <string>

namespace keel::cpu {

Result<void> execute_kernel(Device& device, Op& op) {
    KernelWork& work = *op.kernel;
    std::array<std::byte*, KernelWork::kMaxBuffers> ptrs{};
    const auto buffers = work.buffers();
    for (std::size_t i = 0; i < buffers.size(); ++i) {
        const BufferUse& b = buffers[i];
        if (b.addr == 0 && b.size == 0) continue;  // absent optional buffer
        auto host = device.memory().translate(b.addr, b.size);
        if (!host.ok())
            return Error(host.error().code(),
                         "argument " + std::to_string(i) + " (" + b.role + ") " + host.error().message());
        ptrs[i] = *host;
    }
    return work.body(KernelBuffers({ptrs.data(), buffers.size()}));
}

namespace entries {

keel_error* kernel_get(keel_device device, const char* name, keel_kernel* out_kernel) {
    return plugin::entry("cpu kernel_get", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(Device * d, Device::from(device));
        (void)d;  // the handle is checked; kernels are the same on every device
        KEEL_TRY(plugin::require_non_null(name, "name"));
        KEEL_TRY(plugin::require_non_null(out_kernel, "out_kernel"));
        const KernelDef* def = find_kernel(name);
        if (def == nullptr) {
            std::string known;
            for (const KernelDef& k : all_kernels()) known += (known.empty() ? "" : ", ") + std::string(k.name);
            return Error(KEEL_STATUS_NOT_FOUND, "no kernel named '" + std::string(name) + "' (this device has: " +
                                                    known + ")");
        }
        *out_kernel = reinterpret_cast<keel_kernel>(const_cast<KernelDef*>(def));
        return ok();
    });
}

keel_error* kernel_launch(keel_stream stream, keel_kernel kernel, const keel_launch_args* launch) {
    return plugin::entry("cpu kernel_launch", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(Stream * s, Stream::from(stream));
        if (kernel == nullptr) return Error(KEEL_STATUS_INVALID_ARGUMENT, "kernel is null");
        if (!is_kernel(kernel)) return Error(KEEL_STATUS_INVALID_ARGUMENT, "not a cpu kernel handle");
        const auto* def = reinterpret_cast<const KernelDef*>(kernel);
        KEEL_TRY(s->check_usable());
        KEEL_TRY_ASSIGN(auto args, plugin::LaunchArgsView::make(launch, def->name));
        KEEL_TRY_ASSIGN(KernelWork work, def->validate(args));
        // Memory of another device is refused whatever the checker does: a
        // kernel runs on its stream's device only.
        for (const BufferUse& b : work.buffers()) {
            if ((b.addr == 0 && b.size == 0) || s->device().memory().tagged_here(b.addr)) continue;
            if (const std::optional<std::uint32_t> other = device_of_address(b.addr))
                return Error(KEEL_STATUS_INVALID_ARGUMENT,
                             "[" + std::string(def->name) + "] buffer argument (" + b.role + ") " + hex(b.addr) +
                                 " is memory of cpu:" + std::to_string(*other) + ", but the stream is on cpu:" +
                                 std::to_string(s->device().index()));
        }
        // docs/kernels.md: a buffer outside the device's allocations is
        // refused before anything is enqueued, so the stream stays usable
        // (a checker tracking races refuses it at enqueue with its finding;
        // one that only delays or injects faults does not look).
        // Running checks it again: it may be freed before then.
        if (const Checker* checker = s->device().checker(); checker == nullptr || !checker->config().races) {
            for (const BufferUse& b : work.buffers()) {
                if (b.addr == 0 && b.size == 0) continue;  // absent optional buffer
                if (auto live = s->device().memory().locate(b.addr, b.size); !live.ok())
                    return Error(KEEL_STATUS_INVALID_ARGUMENT, "[" + std::string(def->name) + "] buffer argument (" +
                                                                   b.role + "): " + live.error().message());
            }
        }
        work.name = def->name;
        KEEL_TRY(s->enqueue(
            [&](Op& op) {
                op.kind = OpKind::kernel;
                *op.kernel = std::move(work);
            },
            [](Op& op) {
                if (!op.kernel) op.kernel = std::make_unique<KernelWork>();  // once per queue node
            }));
        return ok();
    });
}

}  // namespace entries
}  // namespace keel::cpu
