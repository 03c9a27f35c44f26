#include <keel/plugin/options.hpp>

#include <algorithm>
#include <cstring>

namespace keel::plugin {

namespace {

// The host fields of 1.6: a runtime of an older minor has none.
constexpr std::size_t kHostOptionsEnd = KEEL_STRUCT_SIZE(keel_host_services, option_stride);

bool valid_option_key(std::string_view key) noexcept {
    return !key.empty() && std::all_of(key.begin(), key.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
    });
}

std::string keys_of(std::span<const OptionSpec> specs) {
    if (specs.empty()) return "it takes no options";
    std::string out = "it takes ";
    for (std::size_t i = 0; i < specs.size(); ++i) out += (i ? ", " : "") + std::string(specs[i].key);
    return out;
}

}  // namespace

Result<Options> Options::read(const keel_host_services* host, std::span<const OptionSpec> specs) {
    std::vector<std::pair<std::string, std::string>> given;
    if (host != nullptr && host->struct_size >= kHostOptionsEnd && host->option_count > 0) {
        if (host->options == nullptr || host->option_stride < KEEL_OPTION_STRUCT_SIZE)
            return Error(KEEL_STATUS_INVALID_ARGUMENT,
                         "options: " + std::to_string(host->option_count) +
                             " given with a null array or a stride below keel_option's size");
        for (std::size_t i = 0; i < host->option_count; ++i) {
            const keel_option* o = keel_option_at(host, i);
            if (o->struct_size < KEEL_OPTION_STRUCT_SIZE || o->key == nullptr || o->value == nullptr)
                return Error(KEEL_STATUS_INVALID_ARGUMENT,
                             "option " + std::to_string(i) + " is malformed (struct_size, key or value)");
            const std::string key = o->key;
            const auto spec = std::find_if(specs.begin(), specs.end(),
                                           [&](const OptionSpec& s) { return key == s.key; });
            if (spec == specs.end())
                return Error(KEEL_STATUS_INVALID_ARGUMENT,
                             "unknown option '" + key + "' (" + keys_of(specs) + ")");
            for (const auto& [k, v] : given)
                if (k == key) return Error(KEEL_STATUS_INVALID_ARGUMENT, "option '" + key + "' is given twice");
            given.emplace_back(key, o->value);
        }
    }
    Options out;
    out.settings_.reserve(specs.size());
    for (const OptionSpec& spec : specs) {
        if (!valid_option_key(spec.key))
            return Error(KEEL_STATUS_INTERNAL, "the plugin declares an invalid option key '" +
                                                   std::string(spec.key) + "'");
        Setting s{spec.key, spec.variable, env::variable(spec.variable).fallback, KEEL_OPTION_SOURCE_DEFAULT, ""};
        const auto option = std::find_if(given.begin(), given.end(), [&](const auto& g) { return g.first == s.key; });
        std::optional<std::string_view> from_env = env::text(spec.variable);
        env::Var env_var = spec.variable;
        if (!from_env && spec.fallback_variable) {
            from_env = env::text(*spec.fallback_variable);
            env_var = *spec.fallback_variable;
        }
        if (option != given.end()) {
            s.value = option->second;
            s.source = KEEL_OPTION_SOURCE_OPTION;
            s.from = "option '" + s.key + "'";
        } else if (from_env) {
            s.value = std::string(*from_env);
            s.source = KEEL_OPTION_SOURCE_ENVIRONMENT;
            s.from = std::string("environment variable ") + env::name(env_var);
        }
        out.settings_.push_back(std::move(s));
    }
    return out;
}

const Options::Setting* Options::find(std::string_view key) const noexcept {
    for (const Setting& s : settings_)
        if (s.key == key) return &s;
    return nullptr;
}

std::optional<std::string_view> Options::text(std::string_view key) const {
    const Setting* s = find(key);
    if (s == nullptr || s->source == KEEL_OPTION_SOURCE_DEFAULT) return std::nullopt;
    return std::string_view(s->value);
}

Error Options::invalid(std::string_view key, std::string_view value) const {
    const Setting* s = find(key);
    if (s == nullptr) return Error(KEEL_STATUS_INTERNAL, "no setting '" + std::string(key) + "'");
    return Error(KEEL_STATUS_INVALID_ARGUMENT, s->from + "='" + std::string(value) + "': expected " +
                                                   env::variable(s->variable).accepts);
}

Result<std::optional<bool>> Options::flag(std::string_view key) const {
    const auto s = text(key);
    if (!s) return std::optional<bool>();
    const std::optional<bool> on = env::parse_switch(*s);
    if (!on) return invalid(key, *s);
    return on;
}

Result<std::optional<std::int64_t>> Options::integer(std::string_view key, std::int64_t min, std::int64_t max) const {
    const auto s = text(key);
    if (!s) return std::optional<std::int64_t>();
    const auto n = env::parse_integer(*s, min, max);
    if (!n) return invalid(key, *s);
    return n;
}

Result<std::optional<std::uint64_t>> Options::bytes(std::string_view key) const {
    const auto s = text(key);
    if (!s) return std::optional<std::uint64_t>();
    const auto n = env::parse_bytes(*s);
    if (!n) return invalid(key, *s);
    return n;
}

Result<std::optional<double>> Options::number(std::string_view key, double min, double max) const {
    const auto s = text(key);
    if (!s) return std::optional<double>();
    const auto x = env::parse_number(*s, min, max);
    if (!x) return invalid(key, *s);
    return x;
}

Result<void> Options::describe(std::uint32_t index, keel_option_info* out) const {
    if (out == nullptr) return Error(KEEL_STATUS_INVALID_ARGUMENT, "out is null");
    if (out->struct_size < sizeof(out->struct_size))
        return Error(KEEL_STATUS_INVALID_ARGUMENT, "out->struct_size is not set");
    if (index >= settings_.size())
        return Error(KEEL_STATUS_NOT_FOUND, "no setting " + std::to_string(index) + " (" +
                                                std::to_string(settings_.size()) + " setting(s))");
    const Setting& s = settings_[index];
    const env::Variable& v = env::variable(s.variable);
    keel_option_info full{};
    full.struct_size = sizeof full;
    full.key = s.key.c_str();
    full.value = s.value.c_str();
    full.source = s.source;
    full.environment_variable = v.name;
    full.accepts = v.accepts;
    full.meaning = v.meaning;
    // Only the fields that fit the caller's struct.
    const std::size_t end = std::min<std::size_t>(out->struct_size, sizeof full);
    constexpr std::size_t begin = sizeof full.struct_size;
    std::memcpy(reinterpret_cast<char*>(out) + begin, reinterpret_cast<const char*>(&full) + begin, end - begin);
    return ok();
}

}  // namespace keel::plugin
