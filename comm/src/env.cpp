// Rank and world size from the variables launchers set.
#include <keel/comm.hpp>
#include <keel/environment.hpp>

#include <charconv>
#include <string>

namespace keel {
namespace {

// The value of `name` as an int >= 0, or -1 when unset or malformed.
int env_int(const char* name) {
    const auto s = env::foreign(name);
    if (!s) return -1;
    const auto v = env::parse_integer(*s, 0, 1 << 24);
    return v ? static_cast<int>(*v) : -1;
}

std::string env_text(const char* name) { return std::string(env::foreign(name).value_or("")); }

}  // namespace

Result<RankInfo> rank_from_env() {
    static constexpr const char* kPairs[][2] = {
        {"RANK", "WORLD_SIZE"},                                // torchrun, keel-launch
        {"SLURM_PROCID", "SLURM_NTASKS"},                      // Slurm
        {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},      // Open MPI
    };
    for (const auto& pair : kPairs) {
        if (!env::foreign(pair[0]) && !env::foreign(pair[1])) continue;
        const int rank = env_int(pair[0]);
        const int size = env_int(pair[1]);
        if (rank < 0 || size < 1 || rank >= size)
            return Error(KEEL_STATUS_INVALID_ARGUMENT,
                         std::string("[rank_from_env] ") + pair[0] + "='" + env_text(pair[0]) + "', " +
                             pair[1] + "='" + env_text(pair[1]) +
                             "': expected 0 <= rank < size");
        return RankInfo{rank, size};
    }
    return Error(KEEL_STATUS_NOT_FOUND,
                 "[rank_from_env] none of RANK/WORLD_SIZE, SLURM_PROCID/SLURM_NTASKS, "
                 "OMPI_COMM_WORLD_RANK/OMPI_COMM_WORLD_SIZE is set");
}

}  // namespace keel
