// Helpers of the happens-before checker tests: a plugin loaded with the
// checker on under one of several schedules (no delay, fixed and seeded
// random delays, poisoning on and off), so that each planted bug and each
// clean twin runs under all of them in one test, and whatever it reports
// is shown not to depend on timing.
#pragma once

#include "cpu_test.hpp"

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace keel::cpu::testing {

// The size of the buffers the checker tests plant their bugs in.
inline constexpr uint64_t kBytes = 4096;

inline bool contains(const std::string& haystack, const std::string& needle) {
    return haystack.find(needle) != std::string::npos;
}

// One schedule the checker runs under.
struct CheckerRun {
    std::string name;
    ScopedEnv::Vars env;
};

// KEEL_CPU_CHECK=1 with poisoning on and off, under no delay, a fixed
// delay and random delays of three seeds.
inline std::vector<CheckerRun> checker_runs() {
    std::vector<CheckerRun> runs;
    for (const char* poison : {"1", "0"}) {
        const std::string p = std::string("poison=") + poison;
        auto with = [&](std::string name, ScopedEnv::Vars extra) {
            ScopedEnv::Vars env{{"KEEL_CPU_CHECK", "1"}, {"KEEL_CPU_POISON", poison}};
            env.insert(env.end(), extra.begin(), extra.end());
            runs.push_back({p + " " + name, std::move(env)});
        };
        with("no delay", {{"KEEL_CPU_DELAY_US", "0"}});
        with("delay 300us", {{"KEEL_CPU_DELAY", "300"}});
        for (const char* seed : {"1", "2", "3"})
            with(std::string("random:200 seed ") + seed, {{"KEEL_CPU_DELAY", "random:200"}, {"KEEL_CPU_SEED", seed}});
    }
    return runs;
}

// A plugin with the checker on, and the handles a test made on it.
class CheckedSession : public Handles {
public:
    explicit CheckedSession(const ScopedEnv::Vars& env) : owned_(std::make_unique<LoadedPlugin>(env)) {
        if (owned_->init_error()) ADD_FAILURE() << owned_->init_error()->message;
        attach(*owned_);
    }
    CheckedSession(const CheckedSession&) = delete;
    CheckedSession& operator=(const CheckedSession&) = delete;
    CheckedSession(CheckedSession&&) = delete;
    CheckedSession& operator=(CheckedSession&&) = delete;
    ~CheckedSession() {
        release();
        owned_.reset();
        drop_gates();
    }

    std::vector<std::string> error_logs() const { return logs_at_least(KEEL_LOG_ERROR); }

private:
    std::unique_ptr<LoadedPlugin> owned_;
};

// Expects `e` to be a finding with `code` whose message holds every one of `parts`.
inline void expect_finding(const std::optional<CError>& e, keel_status code, const std::vector<std::string>& parts) {
    ASSERT_TRUE(e.has_value()) << "the checker did not report it";
    EXPECT_EQ(e->code, code) << e->message;
    for (const std::string& p : parts) EXPECT_TRUE(contains(e->message, p)) << "missing '" << p << "' in: " << e->message;
}

}  // namespace keel::cpu::testing
