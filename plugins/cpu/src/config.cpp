#include "config.hpp"

#include <keel/environment.hpp>

#include <string_view>

namespace keel::cpu {
namespace {

using env::Var;

// Sets `field` from a switch variable, if set.
Result<void> read_switch(Var v, bool& field) {
    KEEL_TRY_ASSIGN(const std::optional<bool> on, env::flag(v));
    if (on) field = *on;
    return ok();
}

Result<void> read_count(Var v, std::int64_t& field) {
    KEEL_TRY_ASSIGN(const std::optional<std::int64_t> n, env::integer(v, 0, INT64_MAX));
    if (n) field = *n;
    return ok();
}

Result<void> read_probability(Var v, double& field) {
    KEEL_TRY_ASSIGN(const std::optional<double> p, env::probability(v));
    if (p) field = *p;
    return ok();
}

// KEEL_CPU_CHECK, or KEEL_CHECK (the runtime's checked memory) when it is
// unset: both parsed as the one switch spelling; KEEL_CPU_CHECK also takes
// "abort".
Result<bool> checker_switch(CheckerConfig& k) {
    if (const auto s = env::text(Var::cpu_check)) {
        if (*s == "abort") return k.abort_on_finding = true;
        const std::optional<bool> on = env::parse_switch(*s);
        if (!on) return env::invalid(Var::cpu_check, *s);
        return *on;
    }
    KEEL_TRY_ASSIGN(const std::optional<bool> check, env::flag(Var::check));
    return check.value_or(false);
}

using env::kMaxCpuDelayUs;
using env::kMaxCpuSpinUs;

Result<void> read_delay(CheckerConfig& k) {
    KEEL_TRY_ASSIGN(const std::optional<std::int64_t> fixed, env::integer(Var::cpu_delay_us, 0, kMaxCpuDelayUs));
    if (fixed) {
        k.delay_us = static_cast<std::uint64_t>(*fixed);
        k.delay_random = false;
    }
    const auto s = env::text(Var::cpu_delay);
    if (!s) return ok();
    constexpr std::string_view kRandom = "random:";
    const bool random = s->starts_with(kRandom);
    const auto n = env::parse_integer(random ? s->substr(kRandom.size()) : *s, 0, kMaxCpuDelayUs);
    if (!n) return env::invalid(Var::cpu_delay, *s);
    k.delay_us = static_cast<std::uint64_t>(*n);
    k.delay_random = random;
    return ok();
}

}  // namespace

Result<Config> read_config_from_environment() {
    Config c;
    KEEL_TRY_ASSIGN(const auto memory, env::bytes(Var::cpu_memory_bytes));
    if (memory) c.memory_bytes = *memory;
    if (const auto s = env::text(Var::cpu_spin_us); s && *s == "forever") {
        c.spin_us = -1;
    } else {
        KEEL_TRY_ASSIGN(const auto spin, env::integer(Var::cpu_spin_us, 0, kMaxCpuSpinUs));
        if (spin) c.spin_us = *spin;
    }
    KEEL_TRY_ASSIGN(const auto devices, env::integer(Var::cpu_devices, 1, env::kMaxCpuDevices));
    if (devices) c.devices = static_cast<std::uint32_t>(*devices);
    KEEL_TRY_ASSIGN(const auto threads, env::integer(Var::cpu_threads, 0, 1024));
    if (threads) c.pool_threads = static_cast<std::uint32_t>(*threads);
    KEEL_TRY(read_switch(Var::cpu_mlock, c.mlock_pinned));

    CheckerConfig& k = c.check;
    KEEL_TRY_ASSIGN(const bool check, checker_switch(k));
    if (check) {
        k.guard = k.poison = k.check_host_sources = k.races = true;
        k.late_free = LateFreeMode::error;
    }
    // Individual switches override what KEEL_CPU_CHECK implies.
    KEEL_TRY(read_switch(Var::cpu_guard, k.guard));
    KEEL_TRY(read_switch(Var::cpu_poison, k.poison));
    KEEL_TRY(read_switch(Var::cpu_check_host_sources, k.check_host_sources));
    KEEL_TRY(read_switch(Var::cpu_check_races, k.races));
    KEEL_TRY_ASSIGN(const auto quarantine, env::bytes(Var::cpu_quarantine_bytes));
    if (quarantine) k.quarantine_bytes = *quarantine;
    if (const auto s = env::text(Var::cpu_late_free)) {
        if (*s == "error") k.late_free = LateFreeMode::error;
        else if (*s == "log") k.late_free = LateFreeMode::log;
        else if (*s == "off") k.late_free = LateFreeMode::off;
        else return env::invalid(Var::cpu_late_free, *s);
    }
    KEEL_TRY(read_delay(k));
    KEEL_TRY_ASSIGN(const auto seed, env::integer(Var::cpu_seed, INT64_MIN, INT64_MAX));
    if (seed) k.seed = static_cast<std::uint64_t>(*seed);
    KEEL_TRY(read_count(Var::cpu_fail_alloc_after, k.fail_alloc_after));
    KEEL_TRY(read_probability(Var::cpu_fail_alloc_prob, k.fail_alloc_prob));
    KEEL_TRY(read_count(Var::cpu_fail_op_after, k.fail_op_after));
    KEEL_TRY(read_probability(Var::cpu_fail_op_prob, k.fail_op_prob));

    c.checker_active = k.guard || k.poison || k.check_host_sources || k.races ||
                       k.late_free != LateFreeMode::off || k.delay_us > 0 ||
                       k.fail_alloc_after >= 0 || k.fail_alloc_prob > 0.0 ||
                       k.fail_op_after >= 0 || k.fail_op_prob > 0.0;
    return c;
}

}  // namespace keel::cpu
