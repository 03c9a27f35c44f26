// Everything the CPU plugin is configured with, read ONCE at
// keel_plugin_init from its options and, where none is given, its KEEL_CPU_*
// variables (so a test that sets variables and then initialises the plugin
// afresh gets exactly those settings). Immutable afterwards: workers read it
// without synchronisation.
#pragma once

#include <keel/plugin/options.hpp>
#include <keel/result.hpp>

#include <cstdint>
#include <span>
#include <string>

namespace keel::cpu {

enum class LateFreeMode : std::uint8_t { off, log, error };

// Checker settings. All off by default.
struct CheckerConfig {
    // Guarded device memory: freed addresses are never reused and stay
    // known, so a late use is reported as "freed" instead of aliasing.
    bool guard = false;
    // Freed device/pinned memory is overwritten with poison.hpp's patterns
    // and quarantined (not returned to the OS) for a while.
    bool poison = false;
    // Bytes of freed memory kept in quarantine before really releasing it.
    std::uint64_t quarantine_bytes = 256ull << 20;
    LateFreeMode late_free = LateFreeMode::off;
    // A host source of memcpy_h2d is fingerprinted at enqueue and checked at
    // execution: a host that reuses the buffer too early is reported.
    bool check_host_sources = false;
    // Happens-before checking at enqueue (checker/happens_before.hpp): races
    // between streams, late frees, out-of-range and use-after-free accesses
    // are reported by the enqueue (or free) call that commits them.
    bool races = false;
    // A finding prints its diagnostic and aborts the process (for CI).
    bool abort_on_finding = false;
    // Delay before every queued operation runs (fixed, or uniformly random
    // in [0, delay_us] when delay_random), seeded by `seed`.
    std::uint64_t delay_us = 0;
    bool delay_random = false;
    std::uint64_t seed = 1;
    // Fault injection; -1 = off.
    std::int64_t fail_alloc_after = -1;
    double fail_alloc_prob = 0.0;
    std::int64_t fail_op_after = -1;
    double fail_op_prob = 0.0;
};

struct Config {
    // Devices (KEEL_CPU_DEVICES), each with memory_bytes of its own memory.
    std::uint32_t devices = 1;
    std::uint64_t memory_bytes = 4ull << 30;
    // How long a worker or a host waiter spins before parking on a futex;
    // negative = never park (spin forever, for dedicated cores).
    std::int64_t spin_us = 50;
    // Threads of the plugin-wide kernel pool (0 = one per core).
    std::uint32_t pool_threads = 0;
    bool mlock_pinned = false;
    CheckerConfig check;

    // True when ANY checker feature is on. Read once per operation on the
    // hot path: with the checker off this is the only cost it adds.
    bool checker_active = false;
};

// The settings the plugin takes, each an option key beside its KEEL_CPU_*
// variable (see plugins/cpu/README.md).
[[nodiscard]] std::span<const plugin::OptionSpec> option_specs() noexcept;

// The configuration `options` (read against option_specs()) give. A
// malformed value is an error naming the option or variable, so a typo
// never silently disables a check.
[[nodiscard]] Result<Config> read_config(const plugin::Options& options);

}  // namespace keel::cpu
