#include "op.hpp"

#include "reduce.hpp"

namespace keel::comm {

namespace {
std::string bytes_text(std::uint64_t n) { return std::to_string(n) + " bytes"; }
}  // namespace

const char* kind_name(OpKind kind) noexcept {
    switch (kind) {
        case OpKind::all_reduce: return "all_reduce";
        case OpKind::broadcast: return "broadcast";
        case OpKind::all_gather: return "all_gather";
        case OpKind::reduce_scatter: return "reduce_scatter";
        case OpKind::send_recv: return "send_recv";
        case OpKind::barrier: return "barrier";
        case OpKind::reduce: return "reduce";
        case OpKind::gather: return "gather";
        case OpKind::scatter: return "scatter";
        case OpKind::all_to_all: return "all_to_all";
    }
    return "?";
}

Signature Op::signature() const noexcept {
    switch (kind) {
        case OpKind::all_reduce:
        case OpKind::reduce_scatter:
            return {static_cast<std::uint64_t>(kind), bytes, static_cast<std::uint64_t>(dtype),
                    static_cast<std::uint64_t>(reduce)};
        case OpKind::broadcast: return {static_cast<std::uint64_t>(kind), bytes, 0, static_cast<std::uint64_t>(root)};
        case OpKind::all_gather: return {static_cast<std::uint64_t>(kind), bytes, 0, 0};
        case OpKind::barrier: return {static_cast<std::uint64_t>(kind), 0, 0, 0};
        case OpKind::reduce:
            return {static_cast<std::uint64_t>(kind), bytes, static_cast<std::uint64_t>(dtype),
                    static_cast<std::uint64_t>(reduce) | (static_cast<std::uint64_t>(root) << 8)};
        case OpKind::send_recv: return group;
        default: break;
    }
    return {};
}

const char* Op::what() const noexcept {
    // A batch names the collective it makes, if any.
    if (kind == OpKind::send_recv && group[0] != 0) return kind_name(static_cast<OpKind>(group[0]));
    return kind_name(kind);
}

std::string Op::detail() const {
    switch (kind) {
        case OpKind::all_reduce:
            return std::string(dtype_name(dtype)) + " " + reduce_name(reduce) + ", " + bytes_text(bytes);
        case OpKind::broadcast: return "root " + std::to_string(root) + ", " + bytes_text(bytes);
        case OpKind::all_gather: return bytes_text(bytes) + " per rank";
        case OpKind::reduce_scatter:
            return std::string(dtype_name(dtype)) + " " + reduce_name(reduce) + ", " + bytes_text(bytes) + " per rank";
        case OpKind::barrier: return "no data";
        case OpKind::reduce:
            return std::string(dtype_name(dtype)) + " " + reduce_name(reduce) + " to root " + std::to_string(root) +
                   ", " + bytes_text(bytes);
        default: break;
    }
    std::string text;
    for (const Transfer& t : transfers) {
        if (!text.empty()) text += ", ";
        text += (t.send ? "send to " : "recv from ") + std::to_string(t.peer) + " " + bytes_text(t.size);
    }
    return text;
}

std::string signature_text(const Signature& s) {
    const OpKind kind = static_cast<OpKind>(s[0] <= static_cast<std::uint64_t>(OpKind::all_to_all) ? s[0] : 0);
    const char* name = kind_name(kind);
    if (kind == OpKind::barrier || kind == OpKind::all_to_all) return name;
    if (kind == OpKind::gather || kind == OpKind::scatter)
        return std::string(name) + " of " + std::to_string(s[1]) + " bytes per rank (root " + std::to_string(s[3]) + ")";
    std::string text = std::string(name) + " of " + std::to_string(s[1]) + " bytes";
    if (kind == OpKind::all_reduce || kind == OpKind::reduce_scatter || kind == OpKind::reduce) {
        const ReduceOp reduce = static_cast<ReduceOp>(s[3] & 0xff);
        text += std::string(" (") + dtype_name(static_cast<keel_dtype>(s[2])) + " " + reduce_name(reduce) +
                (kind == OpKind::reduce ? " to root " + std::to_string(s[3] >> 8) : std::string()) + ")";
    } else if (kind == OpKind::broadcast) {
        text += " (root " + std::to_string(s[3]) + ")";
    } else if (s[0] == 0) {
        text = "no collective";
    }
    return text;
}

std::string describe(const Transfer& t) {
    return std::string(t.send ? "send to" : "recv from") + " peer " + std::to_string(t.peer);
}

}  // namespace keel::comm
