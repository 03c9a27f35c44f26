#include <keel/plugin/kernel_signature.hpp>

#include <algorithm>

namespace keel::plugin {

const char* intent_name(Intent i) noexcept {
    switch (i) {
        case Intent::in: return "read";
        case Intent::out: return "write";
        case Intent::inout: return "read-write";
        case Intent::none: break;
    }
    return "untouched";
}

std::vector<BufferAccess> buffer_accesses(const KernelSignature& signature, const keel_launch_args& launch) {
    std::vector<BufferAccess> out;
    const std::size_t n = std::min<std::size_t>(signature.params.size(), launch.arg_count);
    for (std::size_t i = 0; i < n; ++i) {
        const ParamSpec& p = signature.params[i];
        if (p.intent == Intent::none) continue;
        const keel_kernel_arg& a = *keel_kernel_arg_at(&launch, i);
        if (a.kind != KEEL_ARG_BUFFER || (a.value.buffer.addr == 0 && a.value.buffer.size == 0)) continue;
        out.push_back({a.value.buffer.addr, a.value.buffer.size, p.intent, static_cast<std::uint32_t>(i), p.name});
    }
    return out;
}

}  // namespace keel::plugin
