#include <keel/testing/scoped_env.hpp>

#include <keel/environment.hpp>

#include <cstdlib>

namespace keel::testing {

namespace {
void put(const std::string& name, const std::optional<std::string>& value) {
    if (value)
        ::setenv(name.c_str(), value->c_str(), 1);
    else
        ::unsetenv(name.c_str());
}
}  // namespace

ScopedEnv::ScopedEnv(const Vars& vars) {
    for (const auto& [name, value] : vars) {
        const auto old = env::raw(name.c_str());
        saved_.emplace_back(name, old ? std::optional<std::string>(*old) : std::nullopt);
        put(name, value);
    }
}

ScopedEnv::~ScopedEnv() {
    for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) put(it->first, it->second);
}

}  // namespace keel::testing
