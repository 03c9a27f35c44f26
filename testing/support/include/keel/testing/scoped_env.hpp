// Environment variables set (or unset) for a scope, restored afterwards.
// Not thread-safe (the environment is process-wide): set them before the
// threads that read them start, as plugins read their settings at init.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace keel::testing {

class ScopedEnv {
public:
    // name -> value; nullopt unsets the variable.
    using Vars = std::vector<std::pair<std::string, std::optional<std::string>>>;

    explicit ScopedEnv(const Vars& vars);
    ScopedEnv(std::string name, std::optional<std::string> value)
        : ScopedEnv(Vars{{std::move(name), std::move(value)}}) {}
    ScopedEnv(const ScopedEnv&) = delete;
    ScopedEnv& operator=(const ScopedEnv&) = delete;
    ScopedEnv(ScopedEnv&&) = delete;
    ScopedEnv& operator=(ScopedEnv&&) = delete;
    ~ScopedEnv();

private:
    std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

}  // namespace keel::testing
