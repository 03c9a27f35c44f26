#include "op.hpp"

#include "reduce.hpp"

namespace keel::comm {

namespace {
std::string bytes_text(std::uint64_t n) { return std::to_string(n) + " bytes"; }
}  // namespace

Signature Op::signature() const noexcept {
    switch (kind) {
        case OpKind::all_reduce:
        case OpKind::reduce_scatter:
            return {static_cast<std::uint64_t>(kind), bytes, static_cast<std::uint64_t>(dtype),
                    static_cast<std::uint64_t>(reduce)};
        case OpKind::broadcast: return {static_cast<std::uint64_t>(kind), bytes, 0, static_cast<std::uint64_t>(root)};
        case OpKind::all_gather: return {static_cast<std::uint64_t>(kind), bytes, 0, 0};
        case OpKind::send_recv: break;
    }
    return {};
}

const char* Op::what() const noexcept {
    switch (kind) {
        case OpKind::all_reduce: return "all_reduce";
        case OpKind::broadcast: return "broadcast";
        case OpKind::all_gather: return "all_gather";
        case OpKind::reduce_scatter: return "reduce_scatter";
        case OpKind::send_recv: return "send_recv";
    }
    return "?";
}

std::string Op::detail() const {
    switch (kind) {
        case OpKind::all_reduce:
            return std::string(dtype_name(dtype)) + " " + reduce_name(reduce) + ", " + bytes_text(bytes);
        case OpKind::broadcast: return "root " + std::to_string(root) + ", " + bytes_text(bytes);
        case OpKind::all_gather: return bytes_text(bytes) + " per rank";
        case OpKind::reduce_scatter:
            return std::string(dtype_name(dtype)) + " " + reduce_name(reduce) + ", " + bytes_text(bytes) + " per rank";
        case OpKind::send_recv: break;
    }
    std::string text;
    for (const Transfer& t : transfers) {
        if (!text.empty()) text += ", ";
        text += (t.send ? "send to " : "recv from ") + std::to_string(t.peer) + " " + bytes_text(t.size);
    }
    return text;
}

std::string signature_text(const Signature& s) {
    static constexpr const char* kKinds[] = {"?", "all_reduce", "broadcast", "all_gather", "reduce_scatter"};
    return std::string(kKinds[s[0] < 5 ? s[0] : 0]) + " of " + std::to_string(s[1]) + " bytes (dtype " +
           std::to_string(s[2]) + ", root/op " + std::to_string(s[3]) + ")";
}

std::string describe(const Transfer& t) {
    return std::string(t.send ? "send to" : "recv from") + " peer " + std::to_string(t.peer);
}

}  // namespace keel::comm
