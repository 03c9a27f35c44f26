#include "nccl_library.hpp"
#include "plugin_state.hpp"

#include <keel/base/elf_check.hpp>
#include <keel/environment.hpp>

#include <dlfcn.h>

#include <optional>

namespace keel::cuda {
namespace {

constexpr const char* kDefaultName = "libnccl.so.2";

template <class Fn>
Result<void> bind(void* library, const char* symbol, const std::string& path, Fn& out) {
    void* p = ::dlsym(library, symbol);
    if (p == nullptr)
        return Error(KEEL_STATUS_UNIMPLEMENTED,
                     "NCCL at '" + path + "' lacks " + symbol + " (NCCL 2.x is needed)");
    out = reinterpret_cast<Fn>(p);
    return ok();
}

Result<NcclLibrary> open_nccl() {
    // The option nccl_library, else KEEL_NCCL_LIBRARY (plugin::Options).
    const std::optional<std::string_view> configured = Plugin::options().text("nccl_library");
    const std::string path = configured ? std::string(*configured) : kDefaultName;
    // Never closed: NCCL keeps threads and CUDA state for the process's life.
    // A path is checked first: a cut or corrupt file would crash the system loader.
    if (base::names_a_path(path)) {
        if (auto checked = base::check_shared_library_file(path); !checked)
            return Error(KEEL_STATUS_UNIMPLEMENTED, "NCCL is not available: " + checked.error().message());
    }
    void* library = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (library == nullptr) {
        const char* why = ::dlerror();
        return Error(KEEL_STATUS_UNIMPLEMENTED,
                     "NCCL is not available: dlopen(\"" + path + "\") failed: " + (why ? why : "unknown reason") +
                         (configured ? std::string(" (from KEEL_NCCL_LIBRARY)")
                                     : std::string(" (set KEEL_NCCL_LIBRARY to its path; PyTorch's nvidia-nccl "
                                                   "wheel has it in nvidia/nccl/lib)")));
    }
    NcclLibrary n;
    NcclResult (*get_version)(int*) = nullptr;
    KEEL_TRY(bind(library, "ncclGetVersion", path, get_version));
    KEEL_TRY(bind(library, "ncclGetUniqueId", path, n.GetUniqueId));
    KEEL_TRY(bind(library, "ncclCommInitRank", path, n.CommInitRank));
    // Optional: older NCCL has only the blocking ncclCommInitRank.
    n.CommInitRankConfig = reinterpret_cast<decltype(n.CommInitRankConfig)>(::dlsym(library, "ncclCommInitRankConfig"));
    KEEL_TRY(bind(library, "ncclCommDestroy", path, n.CommDestroy));
    KEEL_TRY(bind(library, "ncclCommAbort", path, n.CommAbort));
    KEEL_TRY(bind(library, "ncclCommGetAsyncError", path, n.CommGetAsyncError));
    KEEL_TRY(bind(library, "ncclGetErrorString", path, n.GetErrorString));
    KEEL_TRY(bind(library, "ncclAllReduce", path, n.AllReduce));
    KEEL_TRY(bind(library, "ncclBroadcast", path, n.Broadcast));
    KEEL_TRY(bind(library, "ncclAllGather", path, n.AllGather));
    KEEL_TRY(bind(library, "ncclReduceScatter", path, n.ReduceScatter));
    KEEL_TRY(bind(library, "ncclSend", path, n.Send));
    KEEL_TRY(bind(library, "ncclRecv", path, n.Recv));
    KEEL_TRY(bind(library, "ncclGroupStart", path, n.GroupStart));
    KEEL_TRY(bind(library, "ncclGroupEnd", path, n.GroupEnd));
    if (get_version(&n.version) != kNcclSuccess)
        return Error(KEEL_STATUS_UNIMPLEMENTED, "NCCL at '" + path + "': ncclGetVersion failed");
    // ncclSend/ncclRecv came with 2.7; older codes were major*1000 + minor*100.
    if (n.version < 20700)
        return Error(KEEL_STATUS_UNIMPLEMENTED,
                     "NCCL at '" + path + "' is version code " + std::to_string(n.version) + ": 2.7 or later is needed");
    return n;
}

}  // namespace

Result<const NcclLibrary*> NcclLibrary::get() {
    static const Result<NcclLibrary> loaded = open_nccl();
    if (!loaded.ok()) return loaded.error();
    return &loaded.value();
}

std::string NcclLibrary::version_text() const {
    return std::to_string(version / 10000) + "." + std::to_string(version / 100 % 100) + "." +
           std::to_string(version % 100);
}

std::string NcclLibrary::describe(NcclResult r) const {
    const char* text = GetErrorString != nullptr ? GetErrorString(r) : nullptr;
    return "ncclResult " + std::to_string(static_cast<int>(r)) + (text ? std::string(" (") + text + ")" : "");
}

Result<NcclDataType> nccl_type(const NcclLibrary& nccl, keel_dtype dtype) {
    switch (dtype) {
        case KEEL_DTYPE_I8: return 0;
        case KEEL_DTYPE_U8: return 1;
        case KEEL_DTYPE_I32: return 2;
        case KEEL_DTYPE_U32: return 3;
        case KEEL_DTYPE_I64: return 4;
        case KEEL_DTYPE_U64: return 5;
        case KEEL_DTYPE_F16: return 6;
        case KEEL_DTYPE_F32: return 7;
        case KEEL_DTYPE_F64: return 8;
        case KEEL_DTYPE_BF16:
            if (nccl.has_avg_and_bf16()) return 9;
            return Error(KEEL_STATUS_INVALID_ARGUMENT, "bf16 needs NCCL 2.10 or later, this is " + nccl.version_text());
        default: return Error(KEEL_STATUS_INVALID_ARGUMENT, "dtype " + std::to_string(dtype) + " cannot be reduced");
    }
}

Result<NcclRedOp> nccl_op(const NcclLibrary& nccl, keel_reduce_op op) {
    switch (op) {
        case KEEL_REDUCE_SUM: return 0;
        case KEEL_REDUCE_PROD: return 1;
        case KEEL_REDUCE_MAX: return 2;
        case KEEL_REDUCE_MIN: return 3;
        case KEEL_REDUCE_AVG:
            if (nccl.has_avg_and_bf16()) return 4;
            return Error(KEEL_STATUS_INVALID_ARGUMENT, "avg needs NCCL 2.10 or later, this is " + nccl.version_text());
        default: return Error(KEEL_STATUS_INVALID_ARGUMENT, "unknown reduction " + std::to_string(op));
    }
}

}  // namespace keel::cuda
