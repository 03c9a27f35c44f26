#include <keel/staging/config.hpp>

#include <keel/environment.hpp>

namespace keel::staging {

Result<StagingConfig> with_environment(StagingConfig config) {
    using env::Var;
    constexpr std::int64_t kMax = std::int64_t{1} << 32;
    KEEL_TRY_ASSIGN(const auto kib, env::integer(Var::pageable_chunk_kib, 1, kMax));
    if (kib) config.pageable.chunk_bytes = static_cast<std::uint64_t>(*kib) * KiB;
    KEEL_TRY_ASSIGN(const auto blocks, env::integer(Var::pageable_blocks, 1, 1024));
    if (blocks) config.pageable.blocks_per_copy = static_cast<std::uint32_t>(*blocks);
    KEEL_TRY_ASSIGN(const auto mib, env::integer(Var::pageable_staging_mib, 1, kMax));
    if (mib) config.pageable.capacity = static_cast<std::uint64_t>(*mib) * MiB;
    KEEL_TRY_ASSIGN(const auto threads, env::integer(Var::pageable_threads, 1, 1024));
    if (threads) config.copy_threads = static_cast<std::uint32_t>(*threads);
    return config;
}

}  // namespace keel::staging
