// Rank and world size from the variables launchers set.
#include <keel/comm.hpp>

#include <cstdlib>
#include <string>

namespace keel {
namespace {

// The value of `name` as an int >= 0, or -1 when unset or malformed.
int env_int(const char* name) {
    const char* s = std::getenv(name);
    if (s == nullptr || *s == '\0') return -1;
    char* end = nullptr;
    const long v = std::strtol(s, &end, 10);
    if (*end != '\0' || v < 0 || v > 1 << 24) return -1;
    return static_cast<int>(v);
}

}  // namespace

Result<RankInfo> rank_from_env() {
    static constexpr const char* kPairs[][2] = {
        {"RANK", "WORLD_SIZE"},                                // torchrun, keel-launch
        {"SLURM_PROCID", "SLURM_NTASKS"},                      // Slurm
        {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},      // Open MPI
    };
    for (const auto& pair : kPairs) {
        if (std::getenv(pair[0]) == nullptr && std::getenv(pair[1]) == nullptr) continue;
        const int rank = env_int(pair[0]);
        const int size = env_int(pair[1]);
        if (rank < 0 || size < 1 || rank >= size)
            return Error(KEEL_STATUS_INVALID_ARGUMENT,
                         std::string("[rank_from_env] ") + pair[0] + "='" +
                             (std::getenv(pair[0]) ? std::getenv(pair[0]) : "") + "', " + pair[1] + "='" +
                             (std::getenv(pair[1]) ? std::getenv(pair[1]) : "") +
                             "': expected 0 <= rank < size");
        return RankInfo{rank, size};
    }
    return Error(KEEL_STATUS_NOT_FOUND,
                 "[rank_from_env] none of RANK/WORLD_SIZE, SLURM_PROCID/SLURM_NTASKS, "
                 "OMPI_COMM_WORLD_RANK/OMPI_COMM_WORLD_SIZE is set");
}

}  // namespace keel
