#include "annotations.hpp"

#include "checker.hpp"

namespace keel::cpu {
namespace {

Result<KernelWork> validate_range(const plugin::LaunchArgsView& args) {
    KEEL_TRY(args.expect_count(1));
    KEEL_TRY_ASSIGN(plugin::BufferArg block, args.buffer(0, "block"));
    KernelWork work;
    // The access is never recorded: an annotation is applied at the call.
    KEEL_TRY(work.use(block, Access::read, "block"));
    return work;
}

constexpr KernelDef kAnnotations[] = {{kReleaseRange.data(), &validate_range},
                                       {kAcquireRange.data(), &validate_range}};

}  // namespace

const KernelDef* find_annotation(std::string_view name) noexcept {
    for (const KernelDef& a : kAnnotations)
        if (name == a.name) return &a;
    return nullptr;
}

bool is_annotation(const void* p) noexcept { return p == &kAnnotations[0] || p == &kAnnotations[1]; }

Result<void> annotate(Checker& checker, Stream& stream, const KernelDef& def, const plugin::LaunchArgsView& args) {
    KEEL_TRY_ASSIGN(KernelWork work, def.validate(args));
    const BufferUse& block = work.buffers()[0];
    if (&def == &kAnnotations[0]) return checker.release_range(stream, block.addr, block.size);
    return checker.acquire_range(stream, block.addr, block.size);
}

}  // namespace keel::cpu
