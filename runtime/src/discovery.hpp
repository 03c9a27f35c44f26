// Where plugins are looked for, and which files are plugin candidates.
#pragma once

#include <keel/runtime.hpp>

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace keel::detail {

// [a-z0-9_]+
[[nodiscard]] bool is_valid_device_type(std::string_view type) noexcept;

// "libkeel_cpu.so" -> "cpu"; nullopt when the name does not follow
// libkeel_<type>.so with a valid type.
[[nodiscard]] std::optional<std::string> type_from_file_name(const std::filesystem::path& file);

// The directory of the file this code was loaded from (libkeel_runtime.so,
// wherever it was installed or moved to); empty if it cannot be told.
[[nodiscard]] std::filesystem::path runtime_library_dir();

// Splits a colon-separated list; empty entries are dropped.
[[nodiscard]] std::vector<std::filesystem::path> split_search_path(std::string_view list);

// options.plugin_path, then KEEL_PLUGIN_PATH, then the default directories.
[[nodiscard]] std::vector<SearchPathEntry> build_search_path(const RuntimeOptions& options);

// Every plugin candidate of the search path, in search order: each
// directory's libkeel_*.so files in name order, and listed files as they
// are. Missing entries are logged (WARN if the user listed them, DEBUG for
// default directories) and skipped.
[[nodiscard]] std::vector<std::filesystem::path> list_candidates(
    const std::vector<SearchPathEntry>& search_path);

}  // namespace keel::detail
