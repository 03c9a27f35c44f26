// Loads one plugin file, or reports why it cannot be used.
#pragma once

#include "plugin.hpp"

#include <keel/result.hpp>

#include <filesystem>
#include <memory>
#include <string>

namespace keel::detail {

// The plugin at `canonical_path` (of device type `type`, from its file
// name), loaded and described: shared with any other Runtime that holds the
// same file loaded, or loaded now (keel_plugin_init runs once per load).
// The error is the reason it was rejected, naming the problem.
//
// Plugins live in a process-wide registry so that a file is never
// initialised twice at once; a plugin being shut down is waited for before
// its file is loaded again.
[[nodiscard]] Result<std::shared_ptr<Plugin>> acquire_plugin(
    const std::filesystem::path& canonical_path, const std::string& type);

}  // namespace keel::detail
