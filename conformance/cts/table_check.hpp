// keel-cts's checks of a plugin file itself, before any device test: its
// name, its exports, the version negotiation, its table (ABI version,
// struct_size, required entries, pairs of optional entries) and what each
// device reports (capability flags consistent with the table).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace keel::cts {

// advice: a "where the plugin can tell" rule the plugin does not detect;
// reported, never a failure.
enum class Outcome { passed, failed, skipped, advice };

struct Check {
    std::string name;    // "exports only keel_plugin_init"
    Outcome outcome = Outcome::passed;
    std::string detail;  // why it failed or was skipped; "" when it passed
    std::string since;   // the keel.h minor of the rule it checks ("1.0"); "" when it checks none
    std::string rule;    // the keel.h identifier of that rule ("table.flags-agree")
};

// A keel.h rule a check cites: KEEL_CTS_RULE(0, "table.flags-agree"), the
// identifier and the minor keel.h gives it (tests/docs/check_rules.py
// checks both against keel.h).
struct RuleRef {
    std::uint32_t minor = 0;
    const char* id = nullptr;
};
#define KEEL_CTS_RULE(minor, id) ::keel::cts::RuleRef{minor, id}

struct TableReport {
    std::filesystem::path file;
    std::string type;     // from plugin_info ("" if it never got that far)
    std::string version;
    std::uint32_t abi_major = 0;
    std::uint32_t abi_minor = 0;
    std::size_t table_size = 0;
    std::uint32_t device_count = 0;
    std::vector<Check> checks;

    [[nodiscard]] bool passed() const;
};

// Loads `file` on its own (dlopen, keel_plugin_init, ..., plugin_shutdown,
// dlclose), so call it before the Runtime of the device tests loads it.
// Never throws; a plugin error is a failed check with the plugin's message.
[[nodiscard]] TableReport check_plugin_table(const std::filesystem::path& file);

}  // namespace keel::cts
