// Loads one plugin file, or reports why it cannot be used.
#pragma once

#include "plugin.hpp"

#include <keel/result.hpp>

#include <filesystem>
#include <map>
#include <memory>
#include <string>

namespace keel::detail {

// The plugin at `canonical_path` (of device type `type`, from its file
// name), loaded with `options` (keel.h "Plugin options") and described:
// shared with any other Runtime that holds the same file loaded with the
// same options, or loaded now (keel_plugin_init runs once per load). The
// error is the reason it was rejected, naming the problem: among them
// options the plugin refused, options given to a plugin of a minor before
// 1.6 (it is shut down again), and other options than those the file is
// loaded with in this process.
//
// Plugins live in a process-wide registry so that a file is never
// initialised twice at once; a plugin being shut down is waited for before
// its file is loaded again.
[[nodiscard]] Result<std::shared_ptr<Plugin>> acquire_plugin(
    const std::filesystem::path& canonical_path, const std::string& type,
    const std::map<std::string, std::string>& options);

}  // namespace keel::detail
