// The command-line convention of every keel tool and sample (CLI11):
//   - --help prints what the tool is for and every option with its default,
//     and exits 0;
//   - a mistake (unknown option, bad or out-of-range value, missing required
//     option) prints the tool's name, the option and the value, and exits 1;
//   - a mistake found after parsing goes through fail(), which does the same.
// Never an abort or an uncaught exception for something a user typed.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdio>
#include <iostream>
#include <optional>
#include <string>

namespace keel::cli {

// A new App whose options show their defaults in --help.
inline void show_defaults(CLI::App& app) { app.option_defaults()->always_capture_default(); }

// Parses the command line: nullopt to go on, or the exit code to return at
// once (0 after --help, 1 after a mistake, with its message on stderr).
[[nodiscard]] inline std::optional<int> parse(CLI::App& app, int argc, char** argv) {
    try {
        app.parse(argc, argv);
        return std::nullopt;
    } catch (const CLI::CallForHelp&) {
        std::cout << app.help();
        return 0;
    } catch (const CLI::CallForAllHelp&) {
        std::cout << app.help("", CLI::AppFormatMode::All);
        return 0;
    } catch (const CLI::ParseError& e) {
        std::cerr << app.get_name() << ": " << e.what() << "\n"
                  << "Run " << app.get_name() << " --help for the options and their defaults.\n";
        return 1;
    }
}

// A mistake found after parsing (a value out of the range another option
// allows, an unknown name in a list): the message, and exit code 1.
[[nodiscard]] inline int fail(const CLI::App& app, const std::string& message) {
    std::cerr << app.get_name() << ": " << message << "\n";
    return 1;
}

}  // namespace keel::cli
