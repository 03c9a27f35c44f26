// Every KEEL_* environment variable keel reads, and the one parser for them.
// Header-only in keel::base, so the runtime, keel::staging, the plugins and
// the samples all read the environment here and nowhere else (this is keel's
// one std::getenv). Each component turns the parsed values into its own
// configuration type.
//
// The rule for composing code and environment (documented in README.md,
// "Settings"): a variable that is set overrides, field by field, what the
// code configured or the default; an unset or empty variable changes
// nothing. The effective configuration is what each component reports
// (MemoryPool::config(), keel-info). A value that does not parse is an
// error (INVALID_ARGUMENT) naming the variable and what it accepts, never a
// silent fallback.
//
// Thread-safety: the functions read the process environment; call them while
// no thread changes it (as for std::getenv).
#pragma once

#include <keel/result.hpp>

#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <initializer_list>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>

namespace keel::env {

// Bounds of the CPU plugin's timing knobs: a delay before every op past a
// second, or a spin window past ten, makes a run look hung, not checked.
inline constexpr std::int64_t kMaxCpuDelayUs = 1'000'000;
inline constexpr std::int64_t kMaxCpuSpinUs = 10'000'000;
// Devices of the CPU plugin: the tag byte of a device address names the
// device (plugins/cpu/src/address_space.hpp), and 16 keep it non-canonical.
inline constexpr std::int64_t kMaxCpuDevices = 16;

// The variables, in the order of kVariables.
enum class Var : unsigned {
    plugin_path,
    log_level,
    check,
    no_caching,
    pageable_chunk_kib,
    pageable_blocks,
    pageable_staging_mib,
    pageable_threads,
    cpu_memory_bytes,
    cpu_spin_us,
    cpu_threads,
    cpu_mlock,
    cpu_check,
    cpu_check_races,
    cpu_guard,
    cpu_poison,
    cpu_quarantine_bytes,
    cpu_check_host_sources,
    cpu_late_free,
    cpu_delay_us,
    cpu_delay,
    cpu_seed,
    cpu_fail_alloc_after,
    cpu_fail_alloc_prob,
    cpu_fail_op_after,
    cpu_fail_op_prob,
    cpu_devices,
    cuda_test_kernels,
    level_zero_loader,
    bench_chunk_kib,
    bench_ring,
    bench_ahead,
    bench_threads,
    // Read only by keel's tests, its fakes and its benchmarks.
    test_cuda_plugin,
    test_level_zero_plugin,
    test_gate_patience_ms,
    test_large_memory,
    test_iface,
    test_stress_seconds,
    test_fake_fail,
    test_fake_plugin_log,
    test_fake_inline,
    comm_store,
    torch_devices,
    comm_generic,
    nccl_library,
    trace,
    memory_history,
    hang_timeout,
    hang_report,
    comm_job_id,
    comm_interface,
};

struct Variable {
    Var var;
    const char* name;
    const char* accepts;   // what a valid value looks like
    const char* fallback;  // the value when unset, in words
    const char* meaning;
    bool for_tests = false;  // read only by keel's tests, fakes and benchmarks (keel-info leaves it out)
};

inline constexpr Variable kVariables[] = {
    {Var::plugin_path, "KEEL_PLUGIN_PATH", "colon-separated directories or plugin files", "(none)",
     "searched for plugins before keel/plugins beside libkeel_runtime.so"},
    {Var::log_level, "KEEL_LOG_LEVEL", "trace|debug|info|warn|error|off", "warn", "the runtime's log level"},
    {Var::check, "KEEL_CHECK", "1|0|on|off|true|false|yes|no", "0",
     "checked device memory (MemoryConfig allocator.checked) and, unless KEEL_CPU_CHECK is set, the CPU checker"},
    {Var::no_caching, "KEEL_NO_CACHING", "1|0|on|off|true|false|yes|no", "0",
     "every Buffer is a device allocation of its own (MemoryConfig allocator.caching off)"},
    {Var::pageable_chunk_kib, "KEEL_PAGEABLE_CHUNK_KIB", "an integer >= 1", "4096",
     "chunk of a plugin's staged pageable copy"},
    {Var::pageable_blocks, "KEEL_PAGEABLE_BLOCKS", "an integer >= 1", "3", "pinned blocks lent to one staged copy"},
    {Var::pageable_staging_mib, "KEEL_PAGEABLE_STAGING_MIB", "an integer >= 1", "256",
     "pinned memory held by a device's staging of pageable copies"},
    {Var::pageable_threads, "KEEL_PAGEABLE_THREADS", "an integer >= 1", "one per hardware thread, at most 16",
     "threads copying between pageable memory and pinned blocks"},
    {Var::cpu_memory_bytes, "KEEL_CPU_MEMORY_BYTES", "a positive byte count (suffix K, M or G allowed)", "4G",
     "the CPU device's memory"},
    {Var::cpu_spin_us, "KEEL_CPU_SPIN_US", "microseconds 0..10000000, or 'forever'", "50",
     "how long a waiting CPU worker or host thread spins before parking"},
    {Var::cpu_threads, "KEEL_CPU_THREADS", "0..1024 (0: one per core)", "0", "threads of the CPU kernel pool"},
    {Var::cpu_mlock, "KEEL_CPU_MLOCK", "1|0|on|off|true|false|yes|no", "0", "mlock the CPU plugin's pinned memory"},
    {Var::cpu_check, "KEEL_CPU_CHECK", "1|0|on|off|true|false|yes|no|abort", "KEEL_CHECK", "the CPU checker"},
    {Var::cpu_check_races, "KEEL_CPU_CHECK_RACES", "1|0|on|off|true|false|yes|no", "KEEL_CPU_CHECK",
     "happens-before checking"},
    {Var::cpu_guard, "KEEL_CPU_GUARD", "1|0|on|off|true|false|yes|no", "KEEL_CPU_CHECK", "guarded device memory"},
    {Var::cpu_poison, "KEEL_CPU_POISON", "1|0|on|off|true|false|yes|no", "KEEL_CPU_CHECK", "poisoned freed memory"},
    {Var::cpu_quarantine_bytes, "KEEL_CPU_QUARANTINE_BYTES", "a positive byte count (suffix K, M or G allowed)",
     "256M", "freed memory kept quarantined"},
    {Var::cpu_check_host_sources, "KEEL_CPU_CHECK_HOST_SOURCES", "1|0|on|off|true|false|yes|no", "KEEL_CPU_CHECK",
     "fingerprinted host sources of copies"},
    {Var::cpu_late_free, "KEEL_CPU_LATE_FREE", "error|log|off", "off (error with the checker)",
     "what freeing memory still in use does"},
    {Var::cpu_delay_us, "KEEL_CPU_DELAY_US", "microseconds 0..1000000", "0", "delay before every queued CPU op"},
    {Var::cpu_delay, "KEEL_CPU_DELAY", "<microseconds> or random:<max microseconds>, 0..1000000", "0",
     "delay before every queued CPU op"},
    {Var::cpu_seed, "KEEL_CPU_SEED", "an integer", "1", "seed of random delays and faults"},
    {Var::cpu_fail_alloc_after, "KEEL_CPU_FAIL_ALLOC_AFTER", "a count >= 0", "off",
     "allocations fail after this many"},
    {Var::cpu_fail_alloc_prob, "KEEL_CPU_FAIL_ALLOC_PROB", "a probability in [0, 1]", "0",
     "allocations fail with this probability"},
    {Var::cpu_fail_op_after, "KEEL_CPU_FAIL_OP_AFTER", "a count >= 0", "off", "the op after this many fails"},
    {Var::cpu_fail_op_prob, "KEEL_CPU_FAIL_OP_PROB", "a probability in [0, 1]", "0",
     "each op fails with this probability"},
    {Var::cpu_devices, "KEEL_CPU_DEVICES", "1..16", "1",
     "devices of the CPU plugin (cpu:0 ... cpu:N-1), each with its own memory"},
    {Var::cuda_test_kernels, "KEEL_CUDA_TEST_KERNELS", "1|0|on|off|true|false|yes|no", "0",
     "the CUDA plugin also serves its test kernels"},
    {Var::level_zero_loader, "KEEL_LEVEL_ZERO_LOADER", "a library name or path", "libze_loader.so.1",
     "the Level Zero loader the plugin opens"},
    {Var::bench_chunk_kib, "KEEL_BENCH_CHUNK_KIB", "an integer >= 1", "the staging default",
     "memory_bench: staging chunk"},
    {Var::bench_ring, "KEEL_BENCH_RING", "an integer >= 1", "the staging default", "memory_bench: staging ring"},
    {Var::bench_ahead, "KEEL_BENCH_AHEAD", "an integer >= 1", "the staging default",
     "memory_bench: chunks staged ahead"},
    {Var::bench_threads, "KEEL_BENCH_THREADS", "an integer >= 1", "the staging default",
     "memory_bench: staging threads"},
    {Var::test_cuda_plugin, "KEEL_CUDA_PLUGIN", "a path to libkeel_cuda.so", "beside the binary, else the build's",
     "the CUDA plugin the CUDA tests and keel-cuda-bench load directly", true},
    {Var::test_level_zero_plugin, "KEEL_LEVEL_ZERO_PLUGIN", "a path to libkeel_level_zero.so",
     "beside the binary, else the build's", "the Level Zero plugin its tests and benchmark load directly", true},
    {Var::test_gate_patience_ms, "KEEL_TEST_GATE_PATIENCE_MS", "milliseconds >= 1", "10000",
     "how long a test's gate waits for a held stream before the test fails", true},
    {Var::test_large_memory, "KEEL_TEST_LARGE_MEMORY", "1|0|on|off|true|false|yes|no", "0",
     "run the tests that need 8.6 GB of host memory", true},
    {Var::test_iface, "KEEL_TEST_IFACE", "a network interface name", "(Gloo's choice)",
     "the interface a two-host comm test rank listens on", true},
    {Var::test_stress_seconds, "KEEL_STRESS_SECONDS", "seconds > 0", "each test's own",
     "how long the CPU plugin's stress tests run", true},
    {Var::test_fake_fail, "KEEL_FAKE_FAIL", "the name of an entry of the fake plugin", "(none)",
     "the fake plugin's entry that fails, read at init", true},
    {Var::test_fake_plugin_log, "KEEL_FAKE_PLUGIN_LOG", "a file path", "(none)",
     "where the fake plugin appends a line per init and shutdown", true},
    {Var::test_fake_inline, "KEEL_FAKE_INLINE", "1|0|on|off|true|false|yes|no", "0",
     "the fake plugin runs all work inline at enqueue", true},
    {Var::comm_store, "KEEL_COMM_STORE", "file:<directory>, redis:<host>:<port> or tcp:<host>:<port>",
     "tcp:$MASTER_ADDR:$MASTER_PORT when both are set, else none",
     "the store of Communicator::create_from_env (keel-launch sets it)"},
    {Var::torch_devices, "KEEL_TORCH_DEVICES", "comma-separated keel device names", "cpu:0",
     "the keel devices behind privateuseone:0, 1, ... (keel_torch)"},
    {Var::comm_generic, "KEEL_COMM_GENERIC", "1|0|on|off|true|false|yes|no", "0",
     "Communicator uses the generic (Gloo) path even where the plugin has native entries"},
    {Var::nccl_library, "KEEL_NCCL_LIBRARY", "a library name or path", "libnccl.so.2",
     "the NCCL library the CUDA plugin opens for its communication entries"},
    {Var::trace, "KEEL_TRACE", "a file path (%p: process id, %r: rank)", "(none: no trace)",
     "a Chrome trace / Perfetto JSON of the whole process, written at exit (docs/tracing.md)"},
    {Var::memory_history, "KEEL_MEMORY_HISTORY", "1|0|on|off|true|false|yes|no", "0",
     "each buffer remembers its allocation's tag or site, for memory snapshots"},
    {Var::hang_timeout, "KEEL_HANG_TIMEOUT", "seconds >= 0 (0: off)", "60",
     "a keel host wait that lasts this long logs the hang doctor's diagnosis (keel::diagnose)"},
    {Var::hang_report, "KEEL_HANG_REPORT", "a file path", "(none)",
     "where the hang doctor also writes its report as JSON, at the hang timeout and on SIGUSR1"},
    {Var::comm_job_id, "KEEL_COMM_JOB_ID", "an id (any text)", "TORCHELASTIC_RUN_ID, else SLURM_JOB_ID, else none",
     "the job whose keys a shared comm store holds under job/<id>/ (keel-launch sets one per run)"},
    {Var::comm_interface, "KEEL_COMM_INTERFACE", "a network interface name", "GLOO_SOCKET_IFNAME, else 127.0.0.1",
     "where Communicator's ranks listen (keel-launch --interface sets it)"},
};

// kVariables is indexed by Var.
[[nodiscard]] constexpr bool variables_in_order() noexcept {
    for (unsigned i = 0; i < std::size(kVariables); ++i)
        if (static_cast<unsigned>(kVariables[i].var) != i) return false;
    return true;
}
static_assert(variables_in_order(), "kVariables lists the variables in the order of Var");

[[nodiscard]] inline const Variable& variable(Var v) noexcept { return kVariables[static_cast<unsigned>(v)]; }
[[nodiscard]] inline const char* name(Var v) noexcept { return variable(v).name; }

// The variable's text; nullopt when unset or empty.
[[nodiscard]] inline std::optional<std::string_view> text(Var v) {
    const char* value = std::getenv(name(v));
    if (value == nullptr || *value == '\0') return std::nullopt;
    return std::string_view(value);
}

// A variable that belongs to another program (a launcher's RANK, a driver
// loader's ZE_ENABLE_ALT_DRIVERS), read here too so that this stays keel's
// one getenv; nullopt when unset or empty. keel parses it where it is used.
[[nodiscard]] inline std::optional<std::string_view> foreign(const char* name) {
    const char* value = std::getenv(name);
    if (value == nullptr || *value == '\0') return std::nullopt;
    return std::string_view(value);
}

// `name`'s value as it is set, empty included; nullopt when unset. For code
// that saves and restores the environment (tests).
[[nodiscard]] inline std::optional<std::string_view> raw(const char* name) {
    const char* value = std::getenv(name);
    if (value == nullptr) return std::nullopt;
    return std::string_view(value);
}

// The error for a value that does not parse.
[[nodiscard]] inline Error invalid(Var v, std::string_view value) {
    return Error(KEEL_STATUS_INVALID_ARGUMENT, std::string("environment variable ") + name(v) + "='" +
                                                   std::string(value) + "': expected " + variable(v).accepts);
}

// 1|0|on|off|true|false|yes|no, the one spelling of a switch everywhere.
[[nodiscard]] inline std::optional<bool> parse_switch(std::string_view s) noexcept {
    if (s == "1" || s == "on" || s == "true" || s == "yes") return true;
    if (s == "0" || s == "off" || s == "false" || s == "no") return false;
    return std::nullopt;
}

[[nodiscard]] inline Result<std::optional<bool>> flag(Var v) {
    const auto s = text(v);
    if (!s) return std::optional<bool>();
    const std::optional<bool> on = parse_switch(*s);
    if (!on) return invalid(v, *s);
    return on;
}

// A whole decimal integer in [min, max].
[[nodiscard]] inline std::optional<std::int64_t> parse_integer(std::string_view s, std::int64_t min,
                                                               std::int64_t max) noexcept {
    std::int64_t out = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    if (ec != std::errc() || end != s.data() + s.size() || out < min || out > max) return std::nullopt;
    return out;
}

[[nodiscard]] inline Result<std::optional<std::int64_t>> integer(Var v, std::int64_t min, std::int64_t max) {
    const auto s = text(v);
    if (!s) return std::optional<std::int64_t>();
    const auto n = parse_integer(*s, min, max);
    if (!n) return invalid(v, *s);
    return n;
}

// A positive integer with an optional K/M/G suffix (binary units).
[[nodiscard]] inline std::optional<std::uint64_t> parse_bytes(std::string_view s) noexcept {
    if (s.empty()) return std::nullopt;
    std::string_view digits = s;
    unsigned shift = 0;
    switch (digits.back()) {
        case 'k': case 'K': shift = 10; break;
        case 'm': case 'M': shift = 20; break;
        case 'g': case 'G': shift = 30; break;
        default: break;
    }
    if (shift != 0) digits.remove_suffix(1);
    const auto n = parse_integer(digits, 1, INT64_MAX >> shift);
    if (!n) return std::nullopt;
    return static_cast<std::uint64_t>(*n) << shift;
}

[[nodiscard]] inline Result<std::optional<std::uint64_t>> bytes(Var v) {
    const auto s = text(v);
    if (!s) return std::optional<std::uint64_t>();
    const auto n = parse_bytes(*s);
    if (!n) return invalid(v, *s);
    return n;
}

// A whole decimal number in [min, max] ("0.5", "30", "1e-3").
[[nodiscard]] inline std::optional<double> parse_number(std::string_view s, double min, double max) {
    const std::string copy(s);
    char* end = nullptr;
    const double x = std::strtod(copy.c_str(), &end);
    if (copy.empty() || end != copy.c_str() + copy.size() || !(x >= min && x <= max)) return std::nullopt;
    return x;
}

[[nodiscard]] inline Result<std::optional<double>> number(Var v, double min, double max) {
    const auto s = text(v);
    if (!s) return std::optional<double>();
    const auto x = parse_number(*s, min, max);
    if (!x) return invalid(v, *s);
    return x;
}

[[nodiscard]] inline Result<std::optional<double>> probability(Var v) { return number(v, 0.0, 1.0); }

// Whether `v`'s value would be accepted by the component that reads it (OK
// when unset): the same parsers and bounds, gathered here so that keel-info
// can mark an invalid setting before any component reads it. Free text
// (paths, names, lists) is always accepted here; its reader judges it.
[[nodiscard]] inline Result<void> validate(Var v) {
    const auto s = text(v);
    if (!s) return ok();
    const auto one_of = [&](std::initializer_list<std::string_view> words) {
        for (std::string_view w : words)
            if (*s == w) return true;
        return false;
    };
    const auto integer_in = [&](std::string_view t, std::int64_t min, std::int64_t max) {
        return parse_integer(t, min, max).has_value();
    };
    bool valid = true;
    switch (v) {
        case Var::log_level: {
            std::string lower(*s);
            for (char& c : lower) c = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
            for (std::string_view w : {"trace", "debug", "info", "warn", "warning", "error", "err", "off"})
                if (lower == w) return ok();
            valid = false;
            break;
        }
        case Var::check: case Var::no_caching: case Var::cpu_mlock: case Var::cpu_check_races:
        case Var::cpu_guard: case Var::cpu_poison: case Var::cpu_check_host_sources:
        case Var::cuda_test_kernels: case Var::test_large_memory: case Var::test_fake_inline:
        case Var::comm_generic: case Var::memory_history:
            valid = parse_switch(*s).has_value();
            break;
        case Var::cpu_check: valid = *s == "abort" || parse_switch(*s).has_value(); break;
        case Var::cpu_late_free: valid = one_of({"error", "log", "off"}); break;
        case Var::pageable_chunk_kib: case Var::pageable_staging_mib:
            valid = integer_in(*s, 1, std::int64_t{1} << 32);
            break;
        case Var::pageable_blocks: case Var::pageable_threads: valid = integer_in(*s, 1, 1024); break;
        case Var::cpu_memory_bytes: case Var::cpu_quarantine_bytes: {
            auto n = bytes(v);
            if (!n) return std::move(n).error();
            return ok();
        }
        case Var::cpu_spin_us: valid = *s == "forever" || integer_in(*s, 0, kMaxCpuSpinUs); break;
        case Var::cpu_threads: valid = integer_in(*s, 0, 1024); break;
        case Var::cpu_devices: valid = integer_in(*s, 1, kMaxCpuDevices); break;
        case Var::cpu_delay_us: valid = integer_in(*s, 0, kMaxCpuDelayUs); break;
        case Var::cpu_delay: {
            std::string_view t = *s;
            if (t.starts_with("random:")) t.remove_prefix(7);
            valid = integer_in(t, 0, kMaxCpuDelayUs);
            break;
        }
        case Var::cpu_seed: valid = integer_in(*s, INT64_MIN, INT64_MAX); break;
        case Var::cpu_fail_alloc_after: case Var::cpu_fail_op_after: valid = integer_in(*s, 0, INT64_MAX); break;
        case Var::cpu_fail_alloc_prob: case Var::cpu_fail_op_prob:
            valid = parse_number(*s, 0.0, 1.0).has_value();
            break;
        case Var::hang_timeout: valid = parse_number(*s, 0.0, 1e9).has_value(); break;
        case Var::comm_store: {
            // Store::from_env's forms: a port 1..65535 after the last ':'.
            const auto host_port = [&](std::string_view t) {
                const std::size_t colon = t.rfind(':');
                return colon != std::string_view::npos && colon > 0 && integer_in(t.substr(colon + 1), 1, 65535);
            };
            valid = (s->starts_with("file:") && s->size() > 5) ||
                    (s->starts_with("redis:") && host_port(s->substr(6))) ||
                    (s->starts_with("tcp:") && host_port(s->substr(4)));
            break;
        }
        case Var::bench_chunk_kib: case Var::bench_ring: case Var::bench_ahead: case Var::bench_threads:
            valid = integer_in(*s, 1, std::int64_t{1} << 40);
            break;
        default: break;  // free text
    }
    if (!valid) return invalid(v, *s);
    return ok();
}

}  // namespace keel::env
