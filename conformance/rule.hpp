// Every conformance check names the keel.h rule it tests by the rule's
// identifier and the minor keel.h gives it (`[area.rule-name] since 1.N:`),
// and a plugin is held only to the rules of the minor it declares (its
// table's abi_minor):
//
//   TEST_P(Conformance, SomeCheck) {
//       KEEL_RULE(0, "copy.h2d-source");
//       ...
//   }
//
// KEEL_RULE is the first statement of every TEST_P of the suite (the
// fixture fails a check that names none, or names no identifier). It
// records the rule and its minor as test properties (keel-cts prints both
// beside each row) and skips the check, saying why, on a plugin that
// declares an older minor. The docs test (tests/docs/check_rules.py) fails
// a citation of an identifier keel.h does not state or with another minor.
//
// keel.h rules that hold "where the plugin can tell" (a plugin without a
// registry cannot) bind no plugin: such a check starts with
// KEEL_RULE_WHERE_IT_CAN_TELL and states its verdict with KEEL_ADVISE_UNLESS.
// A plugin that does not detect the case is given advice (keel-cts prints
// "advice: ..." and counts it apart), never a failure.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace keel::conformance {

// "Where the plugin can tell": what the check reports when the plugin does
// not detect the case.
enum class RuleKind { requirement, where_it_can_tell };

// The prefix of a skip message that keel-cts reports as advice.
inline constexpr const char* kAdvicePrefix = "advice: ";

// `area.rule-name`: lower-case words of [a-z0-9_-], at least two, joined by dots.
[[nodiscard]] constexpr bool is_rule_id(std::string_view id) noexcept {
    bool dot = false;
    std::size_t part = 0;
    for (char c : id) {
        if (c == '.') {
            if (part == 0) return false;
            dot = true;
            part = 0;
        } else if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-') {
            ++part;
        } else {
            return false;
        }
    }
    return dot && part > 0;
}

}  // namespace keel::conformance

// `minor` is the keel.h minor (1.<minor>) of `rule`, a keel.h rule identifier.
#define KEEL_RULE(minor, rule)                                                                   \
    if (const std::optional<std::string> keel_rule_skip =                                        \
            this->cite_rule(minor, rule, ::keel::conformance::RuleKind::requirement))            \
    GTEST_SKIP() << *keel_rule_skip

#define KEEL_RULE_WHERE_IT_CAN_TELL(minor, rule)                                                 \
    if (const std::optional<std::string> keel_rule_skip =                                        \
            this->cite_rule(minor, rule, ::keel::conformance::RuleKind::where_it_can_tell))      \
    GTEST_SKIP() << *keel_rule_skip

// In a check of a "where it can tell" rule: unless `condition` holds, the
// check ends as advice with the streamed message.
#define KEEL_ADVISE_UNLESS(condition)                                                            \
    if (!(condition))                                                                            \
    GTEST_SKIP() << ::keel::conformance::kAdvicePrefix << device().name() << " does not tell: "
