#include "discovery.hpp"

#include "logger.hpp"

#include <keel/environment.hpp>

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <system_error>

namespace keel::detail {

namespace {
constexpr std::string_view kPrefix = "libkeel_";
constexpr std::string_view kSuffix = ".so";

bool looks_like_plugin(const std::string& name) {
    return name.size() > kPrefix.size() + kSuffix.size() && name.starts_with(kPrefix) &&
           name.ends_with(kSuffix);
}

bool is_default_origin(const SearchPathEntry& e) { return e.origin == "beside the runtime"; }
}  // namespace

bool is_valid_device_type(std::string_view type) noexcept {
    if (type.empty()) return false;
    return std::all_of(type.begin(), type.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
    });
}

std::optional<std::string> type_from_file_name(const std::filesystem::path& file) {
    std::string name = file.filename().string();
    if (!looks_like_plugin(name)) return std::nullopt;
    std::string type = name.substr(kPrefix.size(), name.size() - kPrefix.size() - kSuffix.size());
    if (!is_valid_device_type(type)) return std::nullopt;
    return type;
}

std::filesystem::path runtime_library_dir() {
    // Any address inside this library names its file: the runtime itself
    // when it is the shared library, the program when linked statically.
    Dl_info info{};
    if (::dladdr(reinterpret_cast<const void*>(&runtime_library_dir), &info) == 0 ||
        info.dli_fname == nullptr)
        return {};
    std::error_code ec;
    std::filesystem::path file = std::filesystem::canonical(info.dli_fname, ec);
    if (ec) file = info.dli_fname;
    return file.parent_path();
}

std::vector<std::filesystem::path> split_search_path(std::string_view list) {
    std::vector<std::filesystem::path> out;
    while (!list.empty()) {
        std::size_t colon = list.find(':');
        std::string_view entry = list.substr(0, colon);
        if (!entry.empty()) out.emplace_back(entry);
        if (colon == std::string_view::npos) break;
        list.remove_prefix(colon + 1);
    }
    return out;
}

std::vector<SearchPathEntry> build_search_path(const RuntimeOptions& options) {
    std::vector<SearchPathEntry> out;
    for (const auto& p : options.plugin_path) out.push_back({p, "options"});
    if (options.use_env_plugin_path) {
        if (const auto list = env::text(env::Var::plugin_path))
            for (auto& p : split_search_path(*list)) out.push_back({std::move(p), env::name(env::Var::plugin_path)});
    }
    if (options.use_default_plugin_dirs)
        for (auto& e : Runtime::default_plugin_dirs()) out.push_back(std::move(e));
    return out;
}

std::vector<std::filesystem::path> list_candidates(const std::vector<SearchPathEntry>& search_path) {
    namespace fs = std::filesystem;
    std::vector<fs::path> out;
    for (const SearchPathEntry& entry : search_path) {
        std::error_code ec;
        fs::file_status st = fs::status(entry.path, ec);
        if (ec || !fs::exists(st)) {
            if (is_default_origin(entry))
                logger()->debug("[loader] default plugin directory {} does not exist", entry.path.string());
            else
                logger()->warn("[loader] plugin path entry {} (from {}) does not exist",
                               entry.path.string(), entry.origin);
            continue;
        }
        if (!fs::is_directory(st)) {
            out.push_back(entry.path);  // a listed file is loaded directly
            continue;
        }
        std::vector<fs::path> found;
        for (fs::directory_iterator it(entry.path, ec), end; !ec && it != end; it.increment(ec)) {
            const fs::path& p = it->path();
            if (!looks_like_plugin(p.filename().string())) continue;
            std::error_code fec;
            if (fs::is_regular_file(p, fec)) found.push_back(p);
        }
        if (ec)
            logger()->warn("[loader] cannot read plugin directory {}: {}", entry.path.string(),
                           ec.message());
        std::sort(found.begin(), found.end());
        logger()->debug("[loader] {} plugin file(s) in {} (from {})", found.size(),
                        entry.path.string(), entry.origin);
        out.insert(out.end(), found.begin(), found.end());
    }
    return out;
}

}  // namespace keel::detail
