// A plugin's settings, each from one of three sources in this order: an
// option the caller gave at keel_plugin_init (keel.h "Plugin options",
// ABI 1.6), the setting's environment variable, the plugin's default.
// Read once at init; immutable afterwards, so any thread may read it
// (plugin_option_info does) until plugin_shutdown.
//
//   constexpr plugin::OptionSpec kSpecs[] = {
//       {"memory_bytes", env::Var::cpu_memory_bytes},
//   };
//   KEEL_TRY_ASSIGN(plugin::Options options, plugin::Options::read(host, kSpecs));
//   KEEL_TRY_ASSIGN(std::optional<std::uint64_t> memory, options.bytes("memory_bytes"));
#pragma once

#include <keel/environment.hpp>
#include <keel/keel.h>
#include <keel/result.hpp>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace keel::plugin {

// One setting a plugin takes as an option.
struct OptionSpec {
    const char* key;  // [a-z0-9_]+, "memory_bytes"
    env::Var variable;  // its environment variable: what it accepts and means
    // Read when `variable` is unset (KEEL_CHECK under KEEL_CPU_CHECK).
    std::optional<env::Var> fallback_variable = std::nullopt;
};

class Options {
public:
    // The options of `host` checked against `specs`: a key not among them, a
    // key given twice, or a malformed option is INVALID_ARGUMENT naming it.
    // A host of a runtime older than 1.6 gives none.
    [[nodiscard]] static Result<Options> read(const keel_host_services* host, std::span<const OptionSpec> specs);

    Options() = default;
    Options(const Options&) = delete;
    Options& operator=(const Options&) = delete;
    Options(Options&&) noexcept = default;
    Options& operator=(Options&&) noexcept = default;
    ~Options() = default;

    // The setting's text, from its option or else its environment variable;
    // nullopt when neither sets it (the plugin's default applies).
    [[nodiscard]] std::optional<std::string_view> text(std::string_view key) const;
    // The error for a value the plugin does not accept: names the option or
    // the variable it came from, and what is accepted.
    [[nodiscard]] Error invalid(std::string_view key, std::string_view value) const;

    // The one spelling of each kind of value (keel/environment.hpp's).
    [[nodiscard]] Result<std::optional<bool>> flag(std::string_view key) const;
    [[nodiscard]] Result<std::optional<std::int64_t>> integer(std::string_view key, std::int64_t min,
                                                              std::int64_t max) const;
    [[nodiscard]] Result<std::optional<std::uint64_t>> bytes(std::string_view key) const;
    [[nodiscard]] Result<std::optional<double>> number(std::string_view key, double min, double max) const;

    [[nodiscard]] std::size_t size() const noexcept { return settings_.size(); }
    // plugin_option_info's work: the fields of setting `index` that fit
    // `out->struct_size`; NOT_FOUND past the last.
    [[nodiscard]] Result<void> describe(std::uint32_t index, keel_option_info* out) const;

private:
    struct Setting {
        std::string key;
        env::Var variable;
        std::string value;  // in effect: the option's, the variable's, or the default in words
        keel_option_source source = KEEL_OPTION_SOURCE_DEFAULT;
        std::string from;   // where a non-default value came from, for messages
    };
    [[nodiscard]] const Setting* find(std::string_view key) const noexcept;

    std::vector<Setting> settings_;
};

}  // namespace keel::plugin
