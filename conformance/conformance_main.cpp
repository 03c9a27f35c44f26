// The shared Runtime, the device parametrisation, and the checks that the
// suite really tests something.
#include "conformance.hpp"

#include <optional>
#include <sstream>

namespace keel::conformance {

namespace {
std::optional<RuntimeOptions>& chosen_options() {
    static std::optional<RuntimeOptions> options;
    return options;
}

RuntimeOptions build_options() {
    RuntimeOptions options;
#ifdef KEEL_CONFORMANCE_PLUGIN_PATH
    std::string extra = KEEL_CONFORMANCE_PLUGIN_PATH;
    for (std::size_t start = 0; start <= extra.size();) {
        std::size_t colon = extra.find(':', start);
        if (colon == std::string::npos) colon = extra.size();
        if (colon > start) options.plugin_path.emplace_back(extra.substr(start, colon - start));
        start = colon + 1;
    }
#endif
    return options;
}

Runtime create_runtime() {
    auto rt = Runtime::create(chosen_options() ? *chosen_options() : build_options());
    if (!rt.ok()) {
        ADD_FAILURE() << "Runtime::create failed: " << rt.error().message();
        return std::move(Runtime::create(RuntimeOptions{{}, false, false, {}})).value();
    }
    return std::move(rt).value();
}

std::string describe_search(const Runtime& rt) {
    std::ostringstream out;
    out << "searched:";
    for (const SearchPathEntry& e : rt.search_path()) out << " " << e.path.string() << " (" << e.origin << ")";
    for (const RejectedPlugin& r : rt.rejected_plugins()) out << "; rejected " << r.path.string() << ": " << r.reason;
    for (const PluginInfo& p : rt.plugins())
        if (p.device_count == 0) out << "; " << p.type << " has no devices: " << p.status;
    return out.str();
}
}  // namespace

void use_runtime_options(RuntimeOptions options) { chosen_options() = std::move(options); }

const Runtime& runtime() {
    static const Runtime rt = create_runtime();
    return rt;
}

std::vector<std::string> device_names() {
    std::vector<std::string> names;
    for (const Device& d : runtime().devices()) names.push_back(d.name());
    return names;
}

const Device& Conformance::device() const {
    for (const Device& d : runtime().devices())
        if (d.name() == GetParam()) return d;
    std::abort();  // the parameters come from the same list
}

const Device* Conformance::other_device() const {
    for (const Device& d : runtime().devices())
        if (d.name() != GetParam()) return &d;
    return nullptr;
}

std::uint32_t Conformance::plugin_minor() const {
    const std::string type = GetParam().substr(0, GetParam().find(':'));
    for (const PluginInfo& p : runtime().plugins())
        if (p.type == type) return p.abi_minor;
    std::abort();  // every device comes from a plugin that loaded
}

std::optional<std::string> Conformance::cite_rule(std::uint32_t minor, const char* rule, RuleKind kind) {
    if (!is_rule_id(rule)) {
        ADD_FAILURE() << "KEEL_RULE cites \"" << rule << "\", which is not a keel.h rule identifier "
                         "(area.rule-name; conformance/rule.hpp)";
        return std::nullopt;
    }
    cited_ = true;
    const std::string since = "1." + std::to_string(minor);
    RecordProperty("keel_rule", rule);
    RecordProperty("keel_rule_since", since);
    if (kind == RuleKind::where_it_can_tell) RecordProperty("keel_rule_kind", "where the plugin can tell");
    if (plugin_minor() >= minor) return std::nullopt;
    return "a rule of ABI " + since + " ([" + rule + "]); " + device().name() + "'s plugin declares 1." +
           std::to_string(plugin_minor());
}

void Conformance::TearDown() {
    if (!cited_)
        ADD_FAILURE() << "this check names no keel.h rule: start it with KEEL_RULE(minor, \"area.rule-name\") "
                         "(conformance/rule.hpp)";
}

std::string instance_name(const ::testing::TestParamInfo<std::string>& info) {
    std::string name = info.param;
    for (char& c : name)
        if (c == ':') c = '_';
    return name;
}

GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(Conformance);
INSTANTIATE_TEST_SUITE_P(Devices, Conformance, ::testing::ValuesIn(device_names()), instance_name);

TEST(ConformanceSetup, AtLeastOneDeviceIsUnderTest) {
    if (runtime().devices().empty())
        GTEST_SKIP() << "no device loaded, so the device suite did not run; "
                     << describe_search(runtime());
    std::ostringstream names;
    for (const Device& d : runtime().devices()) names << " " << d.name();
    std::cout << "devices under test:" << names.str() << "\n";
}

TEST(ConformanceSetup, EveryPluginFoundLoads) {
    for (const RejectedPlugin& r : runtime().rejected_plugins())
        ADD_FAILURE() << "rejected " << r.path.string() << ": " << r.reason;
}

}  // namespace keel::conformance
