// keel.h 1.4/1.5 communication on NCCL: a keel_comm is an NcclCommunicator*.
// Arguments are checked here (INVALID_ARGUMENT before NCCL sees them, which
// would otherwise report them asynchronously or not at all).
#include "comm_entries.hpp"

#include "handles.hpp"
#include "nccl_comm.hpp"

#include <keel/base/dtype.hpp>
#include <keel/plugin/boundary.hpp>
#include <keel/plugin/p2p_ops.hpp>

#include <vector>

namespace keel::cuda::api {

namespace {

Result<NcclCommunicator*> comm_from(keel_comm h) {
    if (h == nullptr) return Error(KEEL_STATUS_INVALID_ARGUMENT, "comm is null");
    return reinterpret_cast<NcclCommunicator*>(h);
}

Result<void> check_rank(const NcclCommunicator& c, int rank, const char* role, const std::string& what) {
    if (rank < 0 || rank >= c.config().size)
        return Error(KEEL_STATUS_INVALID_ARGUMENT, what + " on " + c.config().where() + ": " + role + " " +
                                                       std::to_string(rank) + " is not a rank of 0.." +
                                                       std::to_string(c.config().size - 1));
    return ok();
}

// The element count and NCCL type of a reduction.
struct Typed {
    NcclDataType type;
    NcclRedOp op;
};
Result<Typed> typed(const NcclCommunicator& c, keel_dtype dtype, keel_reduce_op op, const std::string& what) {
    auto type = nccl_type(c.nccl(), dtype);
    auto red = nccl_op(c.nccl(), op);
    if (!type.ok()) return Error(KEEL_STATUS_INVALID_ARGUMENT, what + ": " + type.error().message());
    if (!red.ok()) return Error(KEEL_STATUS_INVALID_ARGUMENT, what + ": " + red.error().message());
    return Typed{*type, *red};
}

constexpr NcclDataType kBytes = 1;  // ncclUint8: bytes moved as they are

}  // namespace

keel_error* comm_create(keel_device device, const keel_comm_config* config, keel_comm* out_comm) noexcept {
    return plugin::entry("cuda comm_create", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(Device * d, device_from(device));
        KEEL_TRY(plugin::require_non_null(out_comm, "out_comm"));
        KEEL_TRY_ASSIGN(const plugin::CommConfig c, plugin::read_comm_config(config));
        KEEL_TRY_ASSIGN(std::unique_ptr<NcclCommunicator> comm, NcclCommunicator::create(*d, c));
        *out_comm = reinterpret_cast<keel_comm>(comm.release());
        return ok();
    });
}

keel_error* comm_destroy(keel_comm comm) noexcept {
    return plugin::entry("cuda comm_destroy", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(NcclCommunicator * raw, comm_from(comm));
        std::unique_ptr<NcclCommunicator> owned(raw);
        return owned->drain();
    });
}

keel_error* comm_abort(keel_comm comm) noexcept {
    return plugin::entry("cuda comm_abort", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(NcclCommunicator * c, comm_from(comm));
        c->abort("comm_abort on " + c->config().where() + ": aborted");
        return ok();
    });
}

keel_error* comm_all_reduce(keel_comm comm, keel_stream stream, keel_device_addr in, keel_device_addr out,
                            uint64_t count, keel_dtype dtype, keel_reduce_op op) noexcept {
    return plugin::entry("cuda comm_all_reduce", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(NcclCommunicator * c, comm_from(comm));
        KEEL_TRY_ASSIGN(Stream * s, stream_from(stream));
        const std::string what = std::string("all_reduce ") + dtype_name(dtype) + " x " + std::to_string(count);
        KEEL_TRY_ASSIGN(const Typed t, typed(*c, dtype, op, what));
        if (count == 0) return ok();
        return c->enqueue(*s, what, [&](NcclComm n, cudaStream_t cs) {
            return c->nccl().AllReduce(device_ptr(in), device_ptr(out), count, t.type, t.op, n, cs);
        });
    });
}

keel_error* comm_broadcast(keel_comm comm, keel_stream stream, keel_device_addr in, keel_device_addr out,
                           uint64_t bytes, int32_t root) noexcept {
    return plugin::entry("cuda comm_broadcast", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(NcclCommunicator * c, comm_from(comm));
        KEEL_TRY_ASSIGN(Stream * s, stream_from(stream));
        const std::string what = "broadcast from root " + std::to_string(root) + ", " + std::to_string(bytes) + " bytes";
        KEEL_TRY(check_rank(*c, root, "root", what));
        if (bytes == 0) return ok();
        return c->enqueue(*s, what, [&](NcclComm n, cudaStream_t cs) {
            return c->nccl().Broadcast(device_ptr(in), device_ptr(out), bytes, kBytes, root, n, cs);
        });
    });
}

keel_error* comm_all_gather(keel_comm comm, keel_stream stream, keel_device_addr in, keel_device_addr out,
                            uint64_t bytes_per_rank) noexcept {
    return plugin::entry("cuda comm_all_gather", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(NcclCommunicator * c, comm_from(comm));
        KEEL_TRY_ASSIGN(Stream * s, stream_from(stream));
        if (bytes_per_rank == 0) return ok();
        const std::string what = "all_gather " + std::to_string(bytes_per_rank) + " bytes per rank";
        return c->enqueue(*s, what, [&](NcclComm n, cudaStream_t cs) {
            return c->nccl().AllGather(device_ptr(in), device_ptr(out), bytes_per_rank, kBytes, n, cs);
        });
    });
}

keel_error* comm_reduce_scatter(keel_comm comm, keel_stream stream, keel_device_addr in, keel_device_addr out,
                                uint64_t count_per_rank, keel_dtype dtype, keel_reduce_op op) noexcept {
    return plugin::entry("cuda comm_reduce_scatter", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(NcclCommunicator * c, comm_from(comm));
        KEEL_TRY_ASSIGN(Stream * s, stream_from(stream));
        const std::string what =
            std::string("reduce_scatter ") + dtype_name(dtype) + " x " + std::to_string(count_per_rank) + " per rank";
        KEEL_TRY_ASSIGN(const Typed t, typed(*c, dtype, op, what));
        if (count_per_rank == 0) return ok();
        return c->enqueue(*s, what, [&](NcclComm n, cudaStream_t cs) {
            return c->nccl().ReduceScatter(device_ptr(in), device_ptr(out), count_per_rank, t.type, t.op, n, cs);
        });
    });
}

namespace {

// The checked batch, enqueued as one NCCL group.
Result<void> send_recv(keel_comm comm, keel_stream stream, const std::vector<keel_p2p_op>& ops) {
    KEEL_TRY_ASSIGN(NcclCommunicator * c, comm_from(comm));
    KEEL_TRY_ASSIGN(Stream * s, stream_from(stream));
    if (ops.empty()) return ok();
    std::string what = "send_recv";
    for (std::size_t i = 0; i < ops.size(); ++i) {
        const keel_p2p_op& p = ops[i];
        if (p.kind != KEEL_P2P_SEND && p.kind != KEEL_P2P_RECV)
            return Error(KEEL_STATUS_INVALID_ARGUMENT, "ops[" + std::to_string(i) + "] has kind " +
                                                           std::to_string(p.kind));
        KEEL_TRY(check_rank(*c, p.peer, "peer", "send_recv"));
        if (p.peer == c->config().rank)
            return Error(KEEL_STATUS_INVALID_ARGUMENT, "send_recv on " + c->config().where() +
                                                           ": a rank may not send to or receive from itself");
        what += (i == 0 ? " " : ", ") + std::string(p.kind == KEEL_P2P_SEND ? "send to " : "recv from ") +
                std::to_string(p.peer) + " " + std::to_string(p.size) + " bytes";
    }
    return c->enqueue(*s, what, [&](NcclComm n, cudaStream_t cs) {
        for (const keel_p2p_op& p : ops) {
            if (p.size == 0) continue;
            const NcclResult r = p.kind == KEEL_P2P_SEND
                                     ? c->nccl().Send(device_ptr(p.addr), p.size, kBytes, p.peer, n, cs)
                                     : c->nccl().Recv(device_ptr(p.addr), p.size, kBytes, p.peer, n, cs);
            if (r != kNcclSuccess) return r;
        }
        return kNcclSuccess;
    });
}

}  // namespace

keel_error* comm_send_recv(keel_comm comm, keel_stream stream, const keel_p2p_op* ops, uint32_t count) noexcept {
    return plugin::entry("cuda comm_send_recv", [&]() -> Result<void> {
        if (count == 0) return send_recv(comm, stream, {});
        KEEL_TRY(plugin::require_non_null(ops, "ops"));
        // 1.4: entries sizeof(keel_p2p_op) apart, each at least 1.4's size.
        std::vector<keel_p2p_op> known(ops, ops + count);
        for (uint32_t i = 0; i < count; ++i)
            if (known[i].struct_size < KEEL_P2P_OP_STRUCT_SIZE_1_4)
                return Error(KEEL_STATUS_INVALID_ARGUMENT, "ops[" + std::to_string(i) + "] is shorter than keel_p2p_op");
        return send_recv(comm, stream, known);
    });
}

keel_error* comm_send_recv_sized(keel_comm comm, keel_stream stream, const keel_p2p_op* ops, uint32_t count,
                                 size_t op_size) noexcept {
    return plugin::entry("cuda comm_send_recv_sized", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(const std::vector<keel_p2p_op> known, plugin::read_p2p_ops(ops, count, op_size));
        return send_recv(comm, stream, known);
    });
}

}  // namespace keel::cuda::api
