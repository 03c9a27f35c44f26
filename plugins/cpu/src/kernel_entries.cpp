// kernel_get / kernel_launch and a kernel's execution on the worker.
#include "device.hpp"
#include "checker/annotations.hpp"
#include "checker/checker.hpp"
#include "entries.hpp"
#include "execute.hpp"
#include "kernel_registry.hpp"
#include "stream.hpp"

#include <keel/plugin/boundary.hpp>

#include <algorithm>

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

namespace {

// Checker mode: the launch's reads and writes, from the kernel's signature.
// A body that touches a buffer the signature gives no intent is a plugin
// bug the checker would otherwise never see.
Result<void> derive_accesses(const KernelDef& def, const keel_launch_args& launch, KernelWork& work) {
    work.accesses = plugin::buffer_accesses(*def.signature, launch);
    for (const BufferUse& b : work.buffers()) {
        if (b.addr == 0 && b.size == 0) continue;
        const bool declared = std::any_of(work.accesses.begin(), work.accesses.end(), [&](const plugin::BufferAccess& a) {
            return a.addr <= b.addr && b.addr + b.size <= a.addr + a.size;
        });
        if (!declared)
            return Error(KEEL_STATUS_INTERNAL, std::string("[") + def.name() + "] the kernel touches '" + b.role +
                                                   "', which its signature gives no read/write intent");
    }
    return ok();
}

}  // namespace

namespace entries {

keel_error* kernel_get(keel_device device, const char* name, keel_kernel* out_kernel) {
    return plugin::entry("cpu kernel_get", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(Device * d, Device::from(device));
        KEEL_TRY(plugin::require_non_null(name, "name"));
        KEEL_TRY(plugin::require_non_null(out_kernel, "out_kernel"));
        const KernelDef* def = find_kernel(name);
        if (def == nullptr && d->checker() != nullptr) def = find_annotation(name);
        if (def == nullptr) {
            std::string known;
            for (const KernelDef& k : all_kernels()) known += (known.empty() ? "" : ", ") + std::string(k.name());
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
        bool annotation = false;
        if (!is_kernel(kernel)) {
            if (!is_annotation(kernel)) return Error(KEEL_STATUS_INVALID_ARGUMENT, "not a cpu kernel handle");
            annotation = true;  // only handed out in checker mode
        }
        const auto* def = reinterpret_cast<const KernelDef*>(kernel);
        KEEL_TRY(s->check_usable());
        KEEL_TRY_ASSIGN(auto args, plugin::LaunchArgsView::make(launch, def->name()));
        if (annotation) return annotate(*s->device().checker(), *s, *def, args);
        KEEL_TRY_ASSIGN(KernelWork work, def->validate(args));
        work.name = def->name();
        if (s->device().checker()) [[unlikely]] KEEL_TRY(derive_accesses(*def, *launch, work));
        auto owned = std::make_unique<KernelWork>(std::move(work));
        KEEL_TRY(s->enqueue([&](Op& op) {
            op.kind = OpKind::kernel;
            op.kernel = std::move(owned);
        }));
        return ok();
    });
}

}  // namespace entries
}  // namespace keel::cpu
