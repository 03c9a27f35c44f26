// The entries of a comm_send_recv_sized batch (keel.h 1.5) as this
// plugin's keel_p2p_op: entries `op_size` bytes apart, each read up to the
// fields this header knows; bytes beyond them that are not zero ask for
// something this plugin cannot do.
#pragma once

#include <keel/keel.h>
#include <keel/result.hpp>

#include <cstring>
#include <string>
#include <vector>

namespace keel::plugin {

[[nodiscard]] inline Result<std::vector<keel_p2p_op>> read_p2p_ops(const keel_p2p_op* ops, std::uint32_t count,
                                                                   std::size_t op_size) {
    if (op_size < KEEL_P2P_OP_STRUCT_SIZE_1_4)
        return Error(KEEL_STATUS_INVALID_ARGUMENT, "op_size " + std::to_string(op_size) +
                                                       " is shorter than keel_p2p_op of keel.h 1.4 (" +
                                                       std::to_string(KEEL_P2P_OP_STRUCT_SIZE_1_4) + " bytes)");
    if (count > 0 && ops == nullptr) return Error(KEEL_STATUS_INVALID_ARGUMENT, "ops is null");
    const auto* base = reinterpret_cast<const unsigned char*>(ops);
    const std::size_t known = std::min(op_size, sizeof(keel_p2p_op));
    std::vector<keel_p2p_op> out(count);
    for (std::uint32_t i = 0; i < count; ++i) {
        const unsigned char* entry = base + static_cast<std::size_t>(i) * op_size;
        std::memcpy(&out[i], entry, known);
        const std::string at = "ops[" + std::to_string(i) + "]";
        if (out[i].struct_size != op_size)
            return Error(KEEL_STATUS_INVALID_ARGUMENT, at + ".struct_size is " + std::to_string(out[i].struct_size) +
                                                           ", op_size " + std::to_string(op_size));
        for (std::size_t b = known; b < op_size; ++b)
            if (entry[b] != 0)
                return Error(KEEL_STATUS_UNIMPLEMENTED, at + " sets byte " + std::to_string(b) +
                                                            ", a field of a newer keel_p2p_op than this plugin knows (" +
                                                            std::to_string(sizeof(keel_p2p_op)) + " bytes)");
        out[i].struct_size = sizeof(keel_p2p_op);
    }
    return out;
}

}  // namespace keel::plugin
