#include "config.hpp"

#include <charconv>
#include <cstdlib>
#include <string_view>

namespace keel::cpu {
namespace {

const char* env(const char* name) {
    const char* v = std::getenv(name);
    return (v && *v) ? v : nullptr;
}

Error bad(const char* name, std::string_view value, const char* expected) {
    return Error(KEEL_STATUS_INVALID_ARGUMENT, std::string("environment variable ") + name + "='" +
                                                   std::string(value) + "': expected " + expected);
}

Result<std::int64_t> parse_int(const char* name, std::string_view v) {
    std::int64_t out = 0;
    auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
    if (ec != std::errc() || end != v.data() + v.size()) return bad(name, v, "an integer");
    return out;
}

// Integer with an optional K/M/G suffix (binary units).
Result<std::uint64_t> parse_bytes(const char* name, std::string_view v) {
    std::uint64_t mult = 1;
    if (!v.empty()) {
        switch (v.back()) {
            case 'k': case 'K': mult = 1ull << 10; break;
            case 'm': case 'M': mult = 1ull << 20; break;
            case 'g': case 'G': mult = 1ull << 30; break;
            default: break;
        }
        if (mult != 1) v.remove_suffix(1);
    }
    auto n = parse_int(name, v);
    if (!n.ok() || *n <= 0) return bad(name, v, "a positive byte count (suffix K, M or G allowed)");
    return static_cast<std::uint64_t>(*n) * mult;
}

Result<double> parse_prob(const char* name, std::string_view v) {
    char* end = nullptr;
    std::string s(v);
    double p = std::strtod(s.c_str(), &end);
    if (end != s.c_str() + s.size() || p < 0.0 || p > 1.0) return bad(name, v, "a probability in [0, 1]");
    return p;
}

Result<bool> parse_bool(const char* name, std::string_view v) {
    if (v == "1" || v == "on" || v == "true" || v == "yes") return true;
    if (v == "0" || v == "off" || v == "false" || v == "no") return false;
    return bad(name, v, "1|0|on|off");
}

}  // namespace

Result<Config> read_config_from_environment() {
    Config c;
    if (const char* v = env("KEEL_CPU_MEMORY_BYTES")) { KEEL_TRY_ASSIGN(c.memory_bytes, parse_bytes("KEEL_CPU_MEMORY_BYTES", v)); }
    if (const char* v = env("KEEL_CPU_SPIN_US")) {
        if (std::string_view(v) == "forever") {
            c.spin_us = -1;
        } else {
            KEEL_TRY_ASSIGN(c.spin_us, parse_int("KEEL_CPU_SPIN_US", v));
            if (c.spin_us < 0) return bad("KEEL_CPU_SPIN_US", v, "microseconds >= 0, or 'forever'");
        }
    }
    if (const char* v = env("KEEL_CPU_THREADS")) {
        KEEL_TRY_ASSIGN(auto n, parse_int("KEEL_CPU_THREADS", v));
        if (n < 0 || n > 1024) return bad("KEEL_CPU_THREADS", v, "0..1024");
        c.pool_threads = static_cast<std::uint32_t>(n);
    }
    if (const char* v = env("KEEL_CPU_MLOCK")) { KEEL_TRY_ASSIGN(c.mlock_pinned, parse_bool("KEEL_CPU_MLOCK", v)); }

    CheckerConfig& k = c.check;
    // KEEL_CHECK=1 (the runtime's checked memory) turns the checker on too;
    // KEEL_CPU_CHECK, when set, decides.
    bool check = false;
    if (const char* v = env("KEEL_CHECK")) {
        auto b = parse_bool("KEEL_CHECK", v);
        if (!b.ok()) return bad("KEEL_CHECK", v, "1|0|on|off");
        check = *b;
    }
    if (const char* v = env("KEEL_CPU_CHECK")) {
        if (std::string_view(v) == "abort") {
            check = k.abort_on_finding = true;
        } else {
            auto b = parse_bool("KEEL_CPU_CHECK", v);
            if (!b.ok()) return bad("KEEL_CPU_CHECK", v, "1|0|on|off|abort");
            check = *b;
        }
    }
    if (check) {
        k.guard = k.poison = k.check_host_sources = k.races = true;
        k.late_free = LateFreeMode::error;
    }
    // Individual switches override what KEEL_CPU_CHECK implies.
    if (const char* v = env("KEEL_CPU_GUARD")) { KEEL_TRY_ASSIGN(k.guard, parse_bool("KEEL_CPU_GUARD", v)); }
    if (const char* v = env("KEEL_CPU_POISON")) { KEEL_TRY_ASSIGN(k.poison, parse_bool("KEEL_CPU_POISON", v)); }
    if (const char* v = env("KEEL_CPU_CHECK_HOST_SOURCES")) {
        KEEL_TRY_ASSIGN(k.check_host_sources, parse_bool("KEEL_CPU_CHECK_HOST_SOURCES", v));
    }
    if (const char* v = env("KEEL_CPU_CHECK_RACES")) { KEEL_TRY_ASSIGN(k.races, parse_bool("KEEL_CPU_CHECK_RACES", v)); }
    if (const char* v = env("KEEL_CPU_QUARANTINE_BYTES")) {
        KEEL_TRY_ASSIGN(k.quarantine_bytes, parse_bytes("KEEL_CPU_QUARANTINE_BYTES", v));
    }
    if (const char* v = env("KEEL_CPU_LATE_FREE")) {
        std::string_view s(v);
        if (s == "error") k.late_free = LateFreeMode::error;
        else if (s == "log") k.late_free = LateFreeMode::log;
        else if (s == "off") k.late_free = LateFreeMode::off;
        else return bad("KEEL_CPU_LATE_FREE", s, "error|log|off");
    }
    if (const char* v = env("KEEL_CPU_DELAY_US")) {
        KEEL_TRY_ASSIGN(auto n, parse_int("KEEL_CPU_DELAY_US", v));
        if (n < 0) return bad("KEEL_CPU_DELAY_US", v, "microseconds >= 0");
        k.delay_us = static_cast<std::uint64_t>(n);
        k.delay_random = false;
    }
    if (const char* v = env("KEEL_CPU_DELAY")) {
        std::string_view s(v);
        constexpr std::string_view kRandom = "random:";
        if (s.substr(0, kRandom.size()) == kRandom) {
            KEEL_TRY_ASSIGN(auto n, parse_int("KEEL_CPU_DELAY", s.substr(kRandom.size())));
            if (n < 0) return bad("KEEL_CPU_DELAY", s, "random:<max microseconds> or <microseconds>");
            k.delay_us = static_cast<std::uint64_t>(n);
            k.delay_random = true;
        } else {
            KEEL_TRY_ASSIGN(auto n, parse_int("KEEL_CPU_DELAY", s));
            if (n < 0) return bad("KEEL_CPU_DELAY", s, "random:<max microseconds> or <microseconds>");
            k.delay_us = static_cast<std::uint64_t>(n);
            k.delay_random = false;
        }
    }
    if (const char* v = env("KEEL_CPU_SEED")) {
        KEEL_TRY_ASSIGN(auto n, parse_int("KEEL_CPU_SEED", v));
        k.seed = static_cast<std::uint64_t>(n);
    }
    if (const char* v = env("KEEL_CPU_FAIL_ALLOC_AFTER")) {
        KEEL_TRY_ASSIGN(k.fail_alloc_after, parse_int("KEEL_CPU_FAIL_ALLOC_AFTER", v));
        if (k.fail_alloc_after < 0) return bad("KEEL_CPU_FAIL_ALLOC_AFTER", v, "a count >= 0");
    }
    if (const char* v = env("KEEL_CPU_FAIL_ALLOC_PROB")) { KEEL_TRY_ASSIGN(k.fail_alloc_prob, parse_prob("KEEL_CPU_FAIL_ALLOC_PROB", v)); }
    if (const char* v = env("KEEL_CPU_FAIL_OP_AFTER")) {
        KEEL_TRY_ASSIGN(k.fail_op_after, parse_int("KEEL_CPU_FAIL_OP_AFTER", v));
        if (k.fail_op_after < 0) return bad("KEEL_CPU_FAIL_OP_AFTER", v, "a count >= 0");
    }
    if (const char* v = env("KEEL_CPU_FAIL_OP_PROB")) { KEEL_TRY_ASSIGN(k.fail_op_prob, parse_prob("KEEL_CPU_FAIL_OP_PROB", v)); }

    c.checker_active = k.guard || k.poison || k.check_host_sources || k.races ||
                       k.late_free != LateFreeMode::off || k.delay_us > 0 ||
                       k.fail_alloc_after >= 0 || k.fail_alloc_prob > 0.0 ||
                       k.fail_op_after >= 0 || k.fail_op_prob > 0.0;
    return c;
}

}  // namespace keel::cpu
