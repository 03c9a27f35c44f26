#include "config.hpp"

#include <keel/environment.hpp>

#include <string_view>

namespace keel::cpu {
namespace {

using env::Var;

// Every setting, as an option key beside its KEEL_CPU_* variable
// (plugins/cpu/README.md). Options override the variables.
constexpr plugin::OptionSpec kSpecs[] = {
    {"devices", Var::cpu_devices},
    {"memory_bytes", Var::cpu_memory_bytes},
    {"spin_us", Var::cpu_spin_us},
    {"threads", Var::cpu_threads},
    {"mlock", Var::cpu_mlock},
    // Unset, KEEL_CHECK (the runtime's checked memory) decides.
    {"check", Var::cpu_check, Var::check},
    {"check_races", Var::cpu_check_races},
    {"guard", Var::cpu_guard},
    {"poison", Var::cpu_poison},
    {"quarantine_bytes", Var::cpu_quarantine_bytes},
    {"check_host_sources", Var::cpu_check_host_sources},
    {"late_free", Var::cpu_late_free},
    {"delay_us", Var::cpu_delay_us},
    {"delay", Var::cpu_delay},
    {"seed", Var::cpu_seed},
    {"fail_alloc_after", Var::cpu_fail_alloc_after},
    {"fail_alloc_prob", Var::cpu_fail_alloc_prob},
    {"fail_op_after", Var::cpu_fail_op_after},
    {"fail_op_prob", Var::cpu_fail_op_prob},
};

// Sets `field` from a switch, if set.
Result<void> read_switch(const plugin::Options& o, std::string_view key, bool& field) {
    KEEL_TRY_ASSIGN(const std::optional<bool> on, o.flag(key));
    if (on) field = *on;
    return ok();
}

Result<void> read_count(const plugin::Options& o, std::string_view key, std::int64_t& field) {
    KEEL_TRY_ASSIGN(const std::optional<std::int64_t> n, o.integer(key, 0, INT64_MAX));
    if (n) field = *n;
    return ok();
}

Result<void> read_probability(const plugin::Options& o, std::string_view key, double& field) {
    KEEL_TRY_ASSIGN(const std::optional<double> p, o.number(key, 0.0, 1.0));
    if (p) field = *p;
    return ok();
}

// `check` (KEEL_CPU_CHECK, else KEEL_CHECK): the one switch spelling, and
// also "abort".
Result<bool> checker_switch(const plugin::Options& o, CheckerConfig& k) {
    const auto s = o.text("check");
    if (!s) return false;
    if (*s == "abort") return k.abort_on_finding = true;
    const std::optional<bool> on = env::parse_switch(*s);
    if (!on) return o.invalid("check", *s);
    return *on;
}

using env::kMaxCpuDelayUs;
using env::kMaxCpuSpinUs;

Result<void> read_delay(const plugin::Options& o, CheckerConfig& k) {
    KEEL_TRY_ASSIGN(const std::optional<std::int64_t> fixed, o.integer("delay_us", 0, kMaxCpuDelayUs));
    if (fixed) {
        k.delay_us = static_cast<std::uint64_t>(*fixed);
        k.delay_random = false;
    }
    const auto s = o.text("delay");
    if (!s) return ok();
    constexpr std::string_view kRandom = "random:";
    const bool random = s->starts_with(kRandom);
    const auto n = env::parse_integer(random ? s->substr(kRandom.size()) : *s, 0, kMaxCpuDelayUs);
    if (!n) return o.invalid("delay", *s);
    k.delay_us = static_cast<std::uint64_t>(*n);
    k.delay_random = random;
    return ok();
}

}  // namespace

std::span<const plugin::OptionSpec> option_specs() noexcept { return kSpecs; }

Result<Config> read_config(const plugin::Options& o) {
    Config c;
    KEEL_TRY_ASSIGN(const auto memory, o.bytes("memory_bytes"));
    if (memory) c.memory_bytes = *memory;
    if (const auto s = o.text("spin_us"); s && *s == "forever") {
        c.spin_us = -1;
    } else {
        KEEL_TRY_ASSIGN(const auto spin, o.integer("spin_us", 0, kMaxCpuSpinUs));
        if (spin) c.spin_us = *spin;
    }
    KEEL_TRY_ASSIGN(const auto devices, o.integer("devices", 1, env::kMaxCpuDevices));
    if (devices) c.devices = static_cast<std::uint32_t>(*devices);
    KEEL_TRY_ASSIGN(const auto threads, o.integer("threads", 0, 1024));
    if (threads) c.pool_threads = static_cast<std::uint32_t>(*threads);
    KEEL_TRY(read_switch(o, "mlock", c.mlock_pinned));

    CheckerConfig& k = c.check;
    KEEL_TRY_ASSIGN(const bool check, checker_switch(o, k));
    if (check) {
        k.guard = k.poison = k.check_host_sources = k.races = true;
        k.late_free = LateFreeMode::error;
    }
    // Individual switches override what `check` implies.
    KEEL_TRY(read_switch(o, "guard", k.guard));
    KEEL_TRY(read_switch(o, "poison", k.poison));
    KEEL_TRY(read_switch(o, "check_host_sources", k.check_host_sources));
    KEEL_TRY(read_switch(o, "check_races", k.races));
    KEEL_TRY_ASSIGN(const auto quarantine, o.bytes("quarantine_bytes"));
    if (quarantine) k.quarantine_bytes = *quarantine;
    if (const auto s = o.text("late_free")) {
        if (*s == "error") k.late_free = LateFreeMode::error;
        else if (*s == "log") k.late_free = LateFreeMode::log;
        else if (*s == "off") k.late_free = LateFreeMode::off;
        else return o.invalid("late_free", *s);
    }
    KEEL_TRY(read_delay(o, k));
    KEEL_TRY_ASSIGN(const auto seed, o.integer("seed", INT64_MIN, INT64_MAX));
    if (seed) k.seed = static_cast<std::uint64_t>(*seed);
    KEEL_TRY(read_count(o, "fail_alloc_after", k.fail_alloc_after));
    KEEL_TRY(read_probability(o, "fail_alloc_prob", k.fail_alloc_prob));
    KEEL_TRY(read_count(o, "fail_op_after", k.fail_op_after));
    KEEL_TRY(read_probability(o, "fail_op_prob", k.fail_op_prob));

    c.checker_active = k.guard || k.poison || k.check_host_sources || k.races ||
                       k.late_free != LateFreeMode::off || k.delay_us > 0 ||
                       k.fail_alloc_after >= 0 || k.fail_alloc_prob > 0.0 ||
                       k.fail_op_after >= 0 || k.fail_op_prob > 0.0;
    return c;
}

}  // namespace keel::cpu
