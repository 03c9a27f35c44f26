#include "op_accesses.hpp"

#include "../kernel_registry.hpp"

namespace keel::cpu {

void accesses_of(const Op& op, std::vector<OpAccess>& out) {
    auto host = [](const void* p) { return reinterpret_cast<std::uint64_t>(p); };
    switch (op.kind) {
        case OpKind::copy_h2d:
            out.push_back({true, op.dst_addr, op.size, true, "destination"});
            out.push_back({false, host(op.src_host), op.size, false, "source"});
            break;
        case OpKind::copy_d2h:
            out.push_back({true, op.src_addr, op.size, false, "source"});
            out.push_back({false, host(op.dst_host), op.size, true, "destination"});
            break;
        case OpKind::copy_d2d:
        case OpKind::copy_peer:
            out.push_back({true, op.src_addr, op.size, false, "source"});
            out.push_back({true, op.dst_addr, op.size, true, "destination"});
            break;
        case OpKind::memset_d8:
        case OpKind::copy_h2d_inline: out.push_back({true, op.dst_addr, op.size, true, "destination"}); break;
        case OpKind::kernel:
            // An inout buffer is checked and remembered as a write: a write
            // conflicts with whatever a read would, and more.
            for (const BufferUse& b : op.kernel->buffers())
                if (b.addr != 0 || b.size != 0)
                    out.push_back({true, b.addr, b.size, b.access != Access::read, b.role});
            break;
        case OpKind::host_func:
        case OpKind::timestamp:
        case OpKind::wait:
        case OpKind::stop: break;
    }
}

}  // namespace keel::cpu
