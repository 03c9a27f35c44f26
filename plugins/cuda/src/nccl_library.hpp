// NCCL, loaded at run time: the plugin builds and loads without it (NCCL is
// not packaged in Debian; GPU machines with PyTorch have libnccl.so.2 in the
// nvidia-nccl wheel). Only the few parts of NCCL's C ABI the communication
// entries use are declared here, as nccl.h (2.x) defines them; that ABI is
// stable across 2.x.
#pragma once

#include <keel/keel.h>
#include <keel/result.hpp>

#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>

namespace keel::cuda {

struct NcclUniqueId {
    char internal[128];  // NCCL_UNIQUE_ID_BYTES
};
struct NcclCommObject;
using NcclComm = NcclCommObject*;  // ncclComm_t

// ncclResult_t
enum NcclResult : int {
    kNcclSuccess = 0,
    kNcclUnhandledCudaError = 1,
    kNcclSystemError = 2,
    kNcclInternalError = 3,
    kNcclInvalidArgument = 4,
    kNcclInvalidUsage = 5,
    kNcclRemoteError = 6,
    kNcclInProgress = 7,
};

// ncclConfig_t as NCCL 2.14 declared it (the first version with a config):
// NCCL reads a config by its size, magic and version, so a later NCCL takes
// this one as it is. Only `blocking` is set; NCCL's initializer leaves the
// rest undefined too.
struct NcclConfig {
    std::size_t size = sizeof(NcclConfig);
    unsigned int magic = 0xcafebeef;  // NCCL_CONFIG_INITIALIZER's
    unsigned int version = 21400;     // NCCL_VERSION(2, 14, 0): this layout
    int blocking = 1;
};

// ncclDataType_t: ncclInt8 0, ncclUint8 1, ncclInt32 2, ncclUint32 3,
// ncclInt64 4, ncclUint64 5, ncclFloat16 6, ncclFloat32 7, ncclFloat64 8,
// ncclBfloat16 9 (since 2.10).
using NcclDataType = int;
// ncclRedOp_t: ncclSum 0, ncclProd 1, ncclMax 2, ncclMin 3, ncclAvg 4
// (since 2.10) — the order of keel_reduce_op.
using NcclRedOp = int;

class NcclLibrary {
public:
    // The process's NCCL, opened on first use: KEEL_NCCL_LIBRARY if set,
    // else "libnccl.so.2" on the loader's path. The error (UNIMPLEMENTED)
    // says what was tried and why it failed; it is the same on every call.
    [[nodiscard]] static Result<const NcclLibrary*> get();

    // NCCL's version code (2.19.3 -> 21903) and as text ("2.19.3").
    int version = 0;
    [[nodiscard]] std::string version_text() const;
    // ncclAvg and ncclBfloat16 came with 2.10.
    [[nodiscard]] bool has_avg_and_bf16() const noexcept { return version >= 21000; }
    [[nodiscard]] std::string describe(NcclResult r) const;

    NcclResult (*GetUniqueId)(NcclUniqueId* id) = nullptr;
    NcclResult (*CommInitRank)(NcclComm* comm, int nranks, NcclUniqueId id, int rank) = nullptr;
    // Since 2.14 (null before): with blocking = 0 it returns at once, and the
    // communicator's calls may return kNcclInProgress until
    // ncclCommGetAsyncError says otherwise.
    NcclResult (*CommInitRankConfig)(NcclComm* comm, int nranks, NcclUniqueId id, int rank,
                                     NcclConfig* config) = nullptr;
    NcclResult (*CommDestroy)(NcclComm comm) = nullptr;
    NcclResult (*CommAbort)(NcclComm comm) = nullptr;
    NcclResult (*CommGetAsyncError)(NcclComm comm, NcclResult* async_error) = nullptr;
    const char* (*GetErrorString)(NcclResult r) = nullptr;
    NcclResult (*AllReduce)(const void* send, void* recv, std::size_t count, NcclDataType type, NcclRedOp op,
                            NcclComm comm, cudaStream_t stream) = nullptr;
    NcclResult (*Broadcast)(const void* send, void* recv, std::size_t count, NcclDataType type, int root,
                            NcclComm comm, cudaStream_t stream) = nullptr;
    NcclResult (*AllGather)(const void* send, void* recv, std::size_t send_count, NcclDataType type, NcclComm comm,
                            cudaStream_t stream) = nullptr;
    NcclResult (*ReduceScatter)(const void* send, void* recv, std::size_t recv_count, NcclDataType type,
                                NcclRedOp op, NcclComm comm, cudaStream_t stream) = nullptr;
    NcclResult (*Send)(const void* send, std::size_t count, NcclDataType type, int peer, NcclComm comm,
                       cudaStream_t stream) = nullptr;
    NcclResult (*Recv)(void* recv, std::size_t count, NcclDataType type, int peer, NcclComm comm,
                       cudaStream_t stream) = nullptr;
    NcclResult (*GroupStart)() = nullptr;
    NcclResult (*GroupEnd)() = nullptr;
};

// NCCL's type for a keel dtype (bytes are moved as ncclUint8 where no type
// matters); INVALID_ARGUMENT for a dtype NCCL lacks in this version.
[[nodiscard]] Result<NcclDataType> nccl_type(const NcclLibrary& nccl, keel_dtype dtype);
[[nodiscard]] Result<NcclRedOp> nccl_op(const NcclLibrary& nccl, keel_reduce_op op);

}  // namespace keel::cuda
