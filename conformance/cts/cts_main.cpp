// keel-cts: the ABI conformance suite for a vendor's plugin, installed with
// keel. It checks each plugin file (exports, version negotiation, table,
// what its devices report), then runs the device conformance suite that
// keel's CI runs (the same sources) on every device of those plugins, and
// prints a table per plugin and per device. Exit status 0 iff nothing failed.
#include "../conformance.hpp"
#include "report.hpp"
#include "table_check.hpp"

#include <keel/environment.hpp>
#include <keel/keel.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <system_error>
#include <vector>

namespace {

namespace fs = std::filesystem;

constexpr const char* kUsage =
    "keel-cts: checks a keel plugin file against keel.h (exports, version negotiation, table) and runs\n"
    "keel's conformance suite on its devices; exit 0 iff nothing failed.\n"
    "usage: keel-cts [--verbose] [--timeout=SECONDS] [--gtest_filter=...] [PLUGIN ...]\n"
    "  PLUGIN  a plugin file (libkeel_<type>.so) or a directory of them; without one,\n"
    "          every plugin on the search path (KEEL_PLUGIN_PATH, then keel/plugins\n"
    "          beside libkeel_runtime.so)\n"
    "  --verbose  also print GoogleTest's own output\n"
    "  --timeout=SECONDS  a test running longer fails the run with a report (default 120)\n";

// The plugin files `paths` name: files as given, directories' libkeel_*.so.
std::vector<fs::path> plugin_files(const std::vector<fs::path>& paths) {
    std::vector<fs::path> out;
    for (const fs::path& p : paths) {
        std::error_code ec;
        if (!fs::is_directory(p, ec)) {
            if (fs::exists(p, ec)) out.push_back(p);
            else std::cerr << "keel-cts: " << p.string() << " does not exist\n";
            continue;
        }
        std::vector<fs::path> found;
        for (fs::directory_iterator it(p, ec), end; !ec && it != end; it.increment(ec)) {
            std::string name = it->path().filename().string();
            if (name.starts_with("libkeel_") && name.ends_with(".so")) found.push_back(it->path());
        }
        std::sort(found.begin(), found.end());
        out.insert(out.end(), found.begin(), found.end());
    }
    return out;
}

std::vector<fs::path> default_search_path() {
    std::vector<fs::path> out;
    if (const auto text = keel::env::text(keel::env::Var::plugin_path)) {
        const std::string list(*text);
        for (std::size_t start = 0; start <= list.size();) {
            std::size_t colon = std::min(list.find(':', start), list.size());
            if (colon > start) out.emplace_back(list.substr(start, colon - start));
            start = colon + 1;
        }
    }
    for (const keel::SearchPathEntry& e : keel::Runtime::default_plugin_dirs()) out.push_back(e.path);
    return out;
}

void print_device_tables(const std::vector<keel::cts::DeviceTableListener::Group>& groups, std::size_t& failed) {
    for (const auto& group : groups) {
        std::string title = group.device == "setup" ? std::string("suite setup") : "device " + group.device;
        if (auto d = keel::conformance::runtime().device(group.device); d.ok())
            title += " (" + d->properties().name + ")";
        failed += keel::cts::print_table(std::cout, title, group.rows);
    }
}

}  // namespace

int main(int argc, char** argv) {
    bool verbose = false;
    std::chrono::seconds timeout{120};
    std::vector<fs::path> paths;
    for (int i = 1; i < argc; ++i) {
        if (std::strncmp(argv[i], "--gtest_", 8) == 0) {
            continue;  // GoogleTest's, read below
        } else if (std::strcmp(argv[i], "--verbose") == 0) {
            verbose = true;
        } else if (std::strncmp(argv[i], "--timeout=", 10) == 0) {
            const auto seconds = keel::env::parse_integer(argv[i] + 10, 1, 86400);
            if (!seconds) {
                std::cerr << "keel-cts: --timeout: '" << (argv[i] + 10) << "' is not a whole number of seconds in 1..86400\n";
                return 1;
            }
            timeout = std::chrono::seconds(*seconds);
        } else if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
            std::cout << kUsage;
            return 0;
        } else if (argv[i][0] == '-') {
            std::cerr << "keel-cts: unknown option " << argv[i] << "\n" << kUsage;
            return 1;
        } else {
            paths.emplace_back(argv[i]);
        }
    }
    const std::vector<fs::path> files = plugin_files(paths.empty() ? default_search_path() : paths);
    std::cout << "keel-cts " << keel::runtime_version() << " (ABI " << KEEL_ABI_VERSION_MAJOR << "."
              << KEEL_ABI_VERSION_MINOR << "): " << files.size() << " plugin file(s)\n";
    if (files.empty()) {
        std::cerr << "keel-cts: no plugin found\n" << kUsage;
        return 1;
    }

    std::size_t failed = 0;
    for (const fs::path& file : files) {
        keel::cts::TableReport r = keel::cts::check_plugin_table(file);
        std::string title = "plugin " + file.string();
        if (!r.type.empty())
            title += ": " + r.type + " " + r.version + ", ABI " + std::to_string(r.abi_major) + "." +
                     std::to_string(r.abi_minor) + ", table " + std::to_string(r.table_size) + " bytes, " +
                     std::to_string(r.device_count) + " device(s)";
        failed += keel::cts::print_table(std::cout, title, r.checks);
    }
    std::cout.flush();

    // The device suite, on a Runtime that loads exactly these files.
    keel::RuntimeOptions options;
    options.plugin_path = files;
    options.use_env_plugin_path = false;
    options.use_default_plugin_dirs = false;
    keel::conformance::use_runtime_options(options);
    // Registers the device tests, so after the options are set.
    ::testing::InitGoogleTest(&argc, argv);

    ::testing::TestEventListeners& listeners = ::testing::UnitTest::GetInstance()->listeners();
    if (!verbose) delete listeners.Release(listeners.default_result_printer());
    auto* table = new keel::cts::DeviceTableListener;  // owned by GoogleTest once appended
    listeners.Append(table);
    // A plugin call that never returns must still end in a report: the
    // watchdog prints the tables so far and ends the process.
    std::atomic<bool> finished{false};
    std::thread watchdog([&] {
        while (!finished.load()) {
            if (table->running_for() > timeout) {
                print_device_tables(table->groups(timeout), failed);
                std::cout << "\nkeel-cts: FAILED (a test did not finish; the run was stopped)" << std::endl;
                std::_Exit(1);
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
    });
    // Failures are counted by the listener that prints the tables.
    [[maybe_unused]] const int gtest_status = RUN_ALL_TESTS();
    finished.store(true);
    watchdog.join();

    print_device_tables(table->groups(), failed);
    std::cout << "\nkeel-cts: " << (failed == 0 ? "PASSED" : "FAILED") << " (" << failed
              << " failure(s))" << std::endl;
    return failed == 0 ? 0 : 1;
}
