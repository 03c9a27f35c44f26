// The one environment parser (<keel/environment.hpp>): what each kind of
// value accepts, and errors that name the variable and what it takes.
#include <keel/environment.hpp>
#include <keel/testing/knob.hpp>
#include <keel/testing/scoped_env.hpp>

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace keel::env {
namespace {

using testing::ScopedEnv;

void expect_invalid(const Result<void>& r, const std::string& name, const std::string& accepts) {
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), KEEL_STATUS_INVALID_ARGUMENT);
    EXPECT_NE(r.error().message().find(name), std::string::npos) << r.error().message();
    EXPECT_NE(r.error().message().find(accepts), std::string::npos) << r.error().message();
}

template <class T>
Result<void> status(const Result<T>& r) {
    if (r.ok()) return ok();
    return r.error();
}

TEST(Environment, EveryVariableIsAKeelVariableListedOnce) {
    std::set<std::string> names;
    for (const Variable& v : kVariables) {
        EXPECT_TRUE(std::string(v.name).starts_with("KEEL_")) << v.name;
        EXPECT_TRUE(names.insert(v.name).second) << v.name << " is listed twice";
        EXPECT_NE(std::string(v.accepts), "") << v.name;
    }
}

TEST(Environment, ASwitchIsSpelledOneWayForEveryVariable) {
    for (const char* on : {"1", "on", "true", "yes"}) {
        ScopedEnv set("KEEL_CHECK", on);
        EXPECT_EQ(flag(Var::check).value(), std::optional<bool>(true)) << on;
    }
    for (const char* off : {"0", "off", "false", "no"}) {
        ScopedEnv set("KEEL_CHECK", off);
        EXPECT_EQ(flag(Var::check).value(), std::optional<bool>(false)) << off;
    }
    ScopedEnv two("KEEL_CHECK", "2");
    expect_invalid(status(flag(Var::check)), "KEEL_CHECK='2'", "1|0|on|off");
}

TEST(Environment, UnsetAndEmptyChangeNothing) {
    {
        ScopedEnv unset("KEEL_CHECK", std::nullopt);
        EXPECT_EQ(flag(Var::check).value(), std::nullopt);
    }
    ScopedEnv empty("KEEL_CPU_MEMORY_BYTES", "");
    EXPECT_EQ(bytes(Var::cpu_memory_bytes).value(), std::nullopt);
}

TEST(Environment, NumbersBytesAndProbabilitiesAreCheckedWhole) {
    {
        ScopedEnv set("KEEL_CPU_MEMORY_BYTES", "3M");
        EXPECT_EQ(bytes(Var::cpu_memory_bytes).value(), std::optional<std::uint64_t>(3u << 20));
    }
    for (const char* bad : {"3X", "-1", "M", "1.5G"}) {
        ScopedEnv set("KEEL_CPU_MEMORY_BYTES", bad);
        expect_invalid(status(bytes(Var::cpu_memory_bytes)), "KEEL_CPU_MEMORY_BYTES", "byte count");
    }
    {
        ScopedEnv set("KEEL_PAGEABLE_BLOCKS", "3x");
        expect_invalid(status(integer(Var::pageable_blocks, 1, 1024)), "KEEL_PAGEABLE_BLOCKS", "integer >= 1");
    }
    {
        ScopedEnv set("KEEL_PAGEABLE_BLOCKS", "0");
        expect_invalid(status(integer(Var::pageable_blocks, 1, 1024)), "KEEL_PAGEABLE_BLOCKS", "integer >= 1");
    }
    ScopedEnv set("KEEL_CPU_FAIL_OP_PROB", "1.5");
    expect_invalid(status(probability(Var::cpu_fail_op_prob)), "KEEL_CPU_FAIL_OP_PROB", "[0, 1]");
}

TEST(Environment, ATestKnobThatDoesNotParseStopsTheRunNamingTheVariable) {
    {
        ScopedEnv set("KEEL_STRESS_SECONDS", "2.5");
        EXPECT_EQ(testing::knob(number(Var::test_stress_seconds, 1e-3, 1e6), 1.0), 2.5);
    }
    ScopedEnv set("KEEL_STRESS_SECONDS", "long");
    EXPECT_EXIT((void)testing::knob(number(Var::test_stress_seconds, 1e-3, 1e6), 1.0),
                ::testing::ExitedWithCode(2), "KEEL_STRESS_SECONDS='long': expected seconds > 0");
}

TEST(Environment, RawTellsAnEmptyVariableFromAnUnsetOne) {
    {
        ScopedEnv empty("KEEL_TEST_IFACE", "");
        EXPECT_EQ(raw("KEEL_TEST_IFACE"), std::optional<std::string_view>(""));
        EXPECT_EQ(text(Var::test_iface), std::nullopt);
    }
    ScopedEnv unset("KEEL_TEST_IFACE", std::nullopt);
    EXPECT_EQ(raw("KEEL_TEST_IFACE"), std::nullopt);
}

}  // namespace
}  // namespace keel::env
