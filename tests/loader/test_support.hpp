// Helpers for the loader tests: where the fake plugins are, hermetic
// runtime options, the runtime's captured log lines, the fake plugin's
// trace. (Environment variables: keel::testing::ScopedEnv.)
#pragma once

#include <keel/runtime.hpp>
#include <keel/testing/scoped_env.hpp>

#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/spdlog.h>

#include <gtest/gtest.h>

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace keel::test {

namespace fs = std::filesystem;

// <build>/tests/loader/plugins/<dir>
inline fs::path fake_dir(const std::string& dir) { return fs::path(KEEL_FAKE_PLUGIN_ROOT) / dir; }

// The one library inside fake_dir(dir).
inline fs::path fake_file(const std::string& dir, const std::string& type) {
    return fake_dir(dir) / ("libkeel_" + type + ".so");
}

// Only the given entries: no KEEL_PLUGIN_PATH, no default directories.
inline RuntimeOptions only(std::initializer_list<fs::path> entries) {
    RuntimeOptions o;
    o.plugin_path.assign(entries.begin(), entries.end());
    o.use_env_plugin_path = false;
    o.use_default_plugin_dirs = false;
    return o;
}

using keel::testing::ScopedEnv;

// Collects what the "keel" logger writes while it lives.
class LogCapture {
public:
    LogCapture() {
        if (!spdlog::get("keel")) (void)Runtime::create(only({}));  // creates the logger
        logger_ = spdlog::get("keel");
        sink_ = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(256);
        sink_->set_pattern("%l %v");
        logger_->sinks().push_back(sink_);
    }
    LogCapture(const LogCapture&) = delete;
    LogCapture& operator=(const LogCapture&) = delete;
    LogCapture(LogCapture&&) = delete;
    LogCapture& operator=(LogCapture&&) = delete;
    ~LogCapture() {
        auto& sinks = logger_->sinks();
        sinks.erase(std::remove(sinks.begin(), sinks.end(), sink_), sinks.end());
    }

    // Lines of level `level` ("warning", "error", ...) that contain `text`.
    [[nodiscard]] std::vector<std::string> lines(const std::string& level, const std::string& text) const {
        std::vector<std::string> out;
        for (const std::string& l : sink_->last_formatted())
            if (l.rfind(level + " ", 0) == 0 && l.find(text) != std::string::npos) out.push_back(l);
        return out;
    }

private:
    std::shared_ptr<spdlog::logger> logger_;
    std::shared_ptr<spdlog::sinks::ringbuffer_sink_mt> sink_;
};

// A fresh file for the fake plugin's KEEL_FAKE_PLUGIN_LOG, and its lines.
class PluginTrace {
public:
    explicit PluginTrace(const std::string& test_name)
        : path_(fs::temp_directory_path() /
                ("keel_fake_trace_" + std::to_string(::getpid()) + "_" + test_name + ".log")),
          env_("KEEL_FAKE_PLUGIN_LOG", path_.string()) {
        fs::remove(path_);
    }
    PluginTrace(const PluginTrace&) = delete;
    PluginTrace& operator=(const PluginTrace&) = delete;
    PluginTrace(PluginTrace&&) = delete;
    PluginTrace& operator=(PluginTrace&&) = delete;
    ~PluginTrace() { fs::remove(path_); }

    [[nodiscard]] std::vector<std::string> lines() const {
        std::vector<std::string> out;
        std::ifstream in(path_);
        for (std::string l; std::getline(in, l);) out.push_back(l);
        return out;
    }

private:
    fs::path path_;
    ScopedEnv env_;
};

// Whether the dynamic loader still has `file` mapped.
inline bool is_loaded(const fs::path& file) {
    void* h = ::dlopen(file.c_str(), RTLD_NOW | RTLD_NOLOAD);
    if (h == nullptr) return false;
    ::dlclose(h);
    return true;
}

}  // namespace keel::test
