// The one reader of staging's settings from the environment: every path
// that stages (the runtime's MemoryPool, the plugins' pageable staging, the
// runtime's staging for a PINNED_COPIES_ONLY device) starts from its
// StagingConfig and calls this, so a variable means the same everywhere.
#pragma once

#include <keel/base/staging_config.hpp>
#include <keel/result.hpp>

namespace keel::staging {

// `config` with the variables that are set applied, field by field (README
// "Settings"): KEEL_PAGEABLE_CHUNK_KIB (pageable.chunk_bytes),
// KEEL_PAGEABLE_BLOCKS (pageable.blocks_per_copy), KEEL_PAGEABLE_STAGING_MIB
// (pageable.capacity), KEEL_PAGEABLE_THREADS (copy_threads). A value that
// does not parse is INVALID_ARGUMENT naming the variable.
[[nodiscard]] Result<StagingConfig> with_environment(StagingConfig config);

}  // namespace keel::staging
