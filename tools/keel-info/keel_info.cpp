// keel-info: what the runtime finds — the effective settings and where each
// comes from, the plugin search path, the plugins that loaded, those
// rejected with their reasons, and every device.
//
//   keel-info                  everything
//   keel-info --device cpu:0   one device (exit 1 and the existing names if unknown)
//   keel-info --option cpu.memory_bytes=1G   load the plugins with options
//                              (keel.h "Plugin options"): each plugin's
//                              settings show their value and its source
// Exit 1 when a setting is invalid (marked INVALID) or the runtime cannot start.
#include <keel/environment.hpp>
#include <keel/keel.hpp>

#include <keel/tools/cli.hpp>

#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace {

std::string capabilities(const keel::DeviceProperties& p) {
    struct Named {
        keel::DeviceCapability cap;
        const char* name;
    };
    static constexpr Named kNames[] = {
        {keel::DeviceCapability::host_addressable, "host_addressable"},
        {keel::DeviceCapability::event_timing, "event_timing"},
        {keel::DeviceCapability::concurrent_streams, "concurrent_streams"},
        {keel::DeviceCapability::pinned_memory, "pinned_memory"},
        {keel::DeviceCapability::pinned_copies_only, "pinned_copies_only"},
    };
    std::string out;
    for (const Named& n : kNames)
        if (p.has(n.cap)) out += (out.empty() ? "" : ", ") + std::string(n.name);
    return out.empty() ? "(none)" : out;
}

// The effective memory configuration of the device's shared instance.
void print_memory_config(const keel::Device& d) {
    auto memory = keel::MemoryPool::shared(d);
    if (!memory.ok()) {
        std::printf("      memory config   %s\n", memory.error().message().c_str());
        return;
    }
    const keel::AllocatorConfig& a = memory->config().allocator;
    const auto source = [](keel::env::Var var) { return keel::env::text(var) ? keel::env::name(var) : "default"; };
    std::printf("      checked         %s (%s)\n", a.checked ? "yes" : "no", source(keel::env::Var::check));
    std::printf("      caching         %s (%s)\n", a.caching ? "yes" : "no", source(keel::env::Var::no_caching));
}

void print_device(const keel::Device& d) {
    const keel::DeviceProperties& p = d.properties();
    std::printf("  %s  %s\n", d.name().c_str(), p.name.c_str());
    std::printf("      vendor          %s\n", p.vendor.c_str());
    std::printf("      memory          %s", keel::format_bytes(p.total_memory).c_str());
    if (auto info = d.memory_info(); info.ok())
        std::printf(" (%s free)\n", keel::format_bytes(info->free_bytes).c_str());
    else
        std::printf(" (free memory unknown: %s)\n", keel::status_name(info.error().code()));
    std::printf("      max allocation  %s\n", keel::format_bytes(p.max_allocation).c_str());
    std::printf("      alignment       %llu bytes\n", static_cast<unsigned long long>(p.alloc_alignment));
    std::printf("      compute units   %u\n", p.compute_units);
    std::printf("      capabilities    %s\n", capabilities(p).c_str());
    print_memory_config(d);
}

// Every KEEL_* variable but the tests' knobs: its value and whether the
// environment set it or the default holds (a set variable overrides the
// code's configuration), and why a value is invalid. Returns how many are.
int print_settings() {
    std::printf("keel %s (C ABI %u.%u)\n\n", keel::runtime_version(), KEEL_ABI_VERSION_MAJOR,
                KEEL_ABI_VERSION_MINOR);
    std::printf("Settings (a set variable overrides the program's configuration):\n");
    int invalid = 0;
    for (const keel::env::Variable& v : keel::env::kVariables) {
        if (v.for_tests) continue;
        const auto text = keel::env::text(v.var);
        std::printf("  %-28s %s  (%s)\n", v.name, text ? std::string(*text).c_str() : v.fallback,
                    text ? "environment" : "default");
        if (auto valid = keel::env::validate(v.var); !valid) {
            std::printf("      INVALID: expected %s\n", v.accepts);
            ++invalid;
        }
    }
    return invalid;
}

void print_everything(const keel::Runtime& rt) {
    std::printf("\nPlugin search path:\n");
    for (const keel::SearchPathEntry& e : rt.search_path()) {
        std::error_code ec;
        bool exists = std::filesystem::exists(e.path, ec);
        std::printf("  %s  (%s%s)\n", e.path.c_str(), e.origin.c_str(), exists ? "" : ", missing");
    }

    std::printf("\nLoaded plugins (%zu):\n", rt.plugins().size());
    for (const keel::PluginInfo& p : rt.plugins()) {
        std::printf("  %s  %s\n", p.type.c_str(), p.path.c_str());
        std::printf("      version %s, ABI %u.%u (table of %zu bytes), %u device%s\n",
                    p.version.c_str(), p.abi_major, p.abi_minor, p.table_size, p.device_count,
                    p.device_count == 1 ? "" : "s");
        if (!p.status.empty()) std::printf("      status: %s\n", p.status.c_str());
        if (!p.settings.empty()) std::printf("      options (value in effect, from the option, the variable or the default):\n");
        for (const keel::PluginSetting& s : p.settings) {
            std::printf("        %-20s %s  (%s%s%s)\n", s.key.c_str(), s.value.c_str(),
                        keel::setting_source_name(s.source), s.environment_variable.empty() ? "" : "; variable ",
                        s.environment_variable.c_str());
        }
    }

    std::printf("\nRejected plugins (%zu):\n", rt.rejected_plugins().size());
    for (const keel::RejectedPlugin& r : rt.rejected_plugins()) {
        std::printf("  %s\n", r.path.c_str());
        std::printf("      %s: %s\n", keel::status_name(r.status), r.reason.c_str());
    }

    std::printf("\nDevices (%zu):\n", rt.devices().size());
    for (const keel::Device& d : rt.devices()) print_device(d);
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"keel-info: what keel finds on this machine: its settings (KEEL_* variables), the plugin\n"
                 "search path, the plugins that loaded and those rejected (with reasons), and every device.",
                 "keel-info"};
    keel::cli::show_defaults(app);
    std::string device_name;
    std::vector<std::string> plugin_path;
    app.add_option("--device", device_name, "Show only this device (e.g. cpu:0); exit 1 if there is none");
    app.add_option("--plugin-path", plugin_path,
                   "Extra plugin directory or file, searched before KEEL_PLUGIN_PATH (repeatable)");
    std::vector<std::string> plugin_options;
    app.add_option("--option", plugin_options,
                   "An option for a plugin, TYPE.KEY=VALUE (cpu.memory_bytes=1G); it overrides the plugin's "
                   "variable for that setting (repeatable)");
    if (const std::optional<int> code = keel::cli::parse(app, argc, argv)) return *code;

    keel::RuntimeOptions options;
    for (const std::string& o : plugin_options) {
        const std::size_t dot = o.find('.');
        const std::size_t eq = o.find('=');
        if (dot == std::string::npos || eq == std::string::npos || dot == 0 || eq < dot + 2) {
            std::fprintf(stderr, "keel-info: --option '%s': expected TYPE.KEY=VALUE (cpu.memory_bytes=1G)\n",
                         o.c_str());
            return 1;
        }
        options.plugin_options[o.substr(0, dot)][o.substr(dot + 1, eq - dot - 1)] = o.substr(eq + 1);
    }

    const int invalid = device_name.empty() ? print_settings() : 0;
    options.plugin_path.assign(plugin_path.begin(), plugin_path.end());
    auto rt = keel::Runtime::create(options);
    if (!rt.ok()) {
        std::fprintf(stderr, "keel-info: %s\n", rt.error().message().c_str());
        return 1;
    }
    if (device_name.empty()) {
        print_everything(*rt);
        if (invalid == 0) return 0;
        std::fprintf(stderr, "keel-info: %d setting(s) invalid (marked INVALID above)\n", invalid);
        return 1;
    }
    auto device = rt->device(device_name);
    if (!device.ok()) {
        std::fprintf(stderr, "keel-info: %s\n", device.error().message().c_str());
        return 1;
    }
    print_device(*device);
    return 0;
}
