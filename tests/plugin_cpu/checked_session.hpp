// Helpers of the happens-before checker tests: a plugin loaded with the
// checker on under one of several schedules (no delay, fixed and seeded
// random delays, poisoning on and off), so that each planted bug and each
// clean twin runs under all of them in one test, and whatever it reports
// is shown not to depend on timing.
#pragma once

#include "cpu_test.hpp"

#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace keel::cpu::testing {

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

// A plugin with the checker on, and the handles a test made (released at
// the end, whatever state the checker left them in).
class CheckedSession {
public:
    explicit CheckedSession(const ScopedEnv::Vars& env) : plugin_(std::make_unique<LoadedPlugin>(env)) {
        if (plugin_->init_error()) ADD_FAILURE() << plugin_->init_error()->message;
    }
    CheckedSession(const CheckedSession&) = delete;
    CheckedSession& operator=(const CheckedSession&) = delete;
    CheckedSession(CheckedSession&&) = delete;
    CheckedSession& operator=(CheckedSession&&) = delete;
    ~CheckedSession() {
        for (auto& g : gates_) g->open();
        for (keel_event e : events_) take(api().event_destroy(e));
        for (keel_stream s : streams_) take(api().stream_destroy(s));
        for (keel_device_addr a : allocations_) take(api().device_free(dev(), a));
        for (void* p : pinned_) take(api().host_free(dev(), p));
        plugin_.reset();
    }

    const keel_plugin_api& api() const { return plugin_->api(); }
    keel_device dev() const { return plugin_->device(); }
    LoadedPlugin& plugin() { return *plugin_; }

    keel_stream stream() {
        keel_stream s = nullptr;
        auto e = take(api().stream_create(dev(), 0, &s));
        EXPECT_FALSE(e) << e->message;
        streams_.push_back(s);
        return s;
    }
    keel_event event() {
        keel_event ev = nullptr;
        auto e = take(api().event_create(dev(), KEEL_EVENT_DEFAULT, &ev));
        EXPECT_FALSE(e) << e->message;
        events_.push_back(ev);
        return ev;
    }
    keel_device_addr alloc(uint64_t size) {
        keel_device_addr a = 0;
        auto e = take(api().device_alloc(dev(), size, &a));
        EXPECT_FALSE(e) << e->message;
        allocations_.push_back(a);
        return a;
    }
    void* pinned(uint64_t size) {
        void* p = nullptr;
        auto e = take(api().host_alloc(dev(), size, &p));
        EXPECT_FALSE(e) << e->message;
        pinned_.push_back(p);
        return p;
    }
    void forget_allocation(keel_device_addr a) { std::erase(allocations_, a); }
    void forget_pinned(void* p) { std::erase(pinned_, p); }

    // Holds `s`'s worker until the gate opens (a host function, enqueued first).
    Gate* block(keel_stream s) {
        gates_.push_back(std::make_unique<Gate>());
        auto e = take(api().stream_enqueue_host_func(s, &Gate::wait_fn, gates_.back().get()));
        EXPECT_FALSE(e) << e->message;
        return gates_.back().get();
    }

    keel_kernel kernel(const char* name) {
        keel_kernel k = nullptr;
        auto e = take(api().kernel_get(dev(), name, &k));
        EXPECT_FALSE(e) << e->message;
        return k;
    }
    std::optional<CError> fill(keel_stream s, keel_device_addr out, uint64_t bytes, float value) {
        std::vector<keel_kernel_arg> args{buffer_arg(out, bytes), f32_arg(value)};
        keel_launch_args l = launch_args(args);
        return take(api().kernel_launch(s, kernel("fill"), &l));
    }
    // y = alpha * x + y
    std::optional<CError> axpy(keel_stream s, float alpha, keel_device_addr x, keel_device_addr y, uint64_t bytes) {
        std::vector<keel_kernel_arg> args{f32_arg(alpha), buffer_arg(x, bytes), buffer_arg(y, bytes)};
        keel_launch_args l = launch_args(args);
        return take(api().kernel_launch(s, kernel("axpy"), &l));
    }
    // Copies n floats back and synchronizes `s`; empty on an error.
    std::vector<float> read_f32(keel_stream s, keel_device_addr a, size_t n) {
        std::vector<float> out(n);
        if (take(api().memcpy_d2h(s, out.data(), a, n * sizeof(float)))) return {};
        if (take(api().stream_synchronize(s))) return {};
        return out;
    }
    // Messages logged at ERROR or above.
    std::vector<std::string> error_logs() const {
        std::vector<std::string> out;
        for (const auto& l : plugin_->logs())
            if (l.level >= KEEL_LOG_ERROR) out.push_back(l.message);
        return out;
    }

private:
    std::unique_ptr<LoadedPlugin> plugin_;
    std::vector<keel_stream> streams_;
    std::vector<keel_event> events_;
    std::vector<keel_device_addr> allocations_;
    std::vector<void*> pinned_;
    std::vector<std::unique_ptr<Gate>> gates_;
};

// Expects `e` to be a finding with `code` whose message holds every one of `parts`.
inline void expect_finding(const std::optional<CError>& e, keel_status code, const std::vector<std::string>& parts) {
    ASSERT_TRUE(e.has_value()) << "the checker did not report it";
    EXPECT_EQ(e->code, code) << e->message;
    for (const std::string& p : parts) EXPECT_TRUE(contains(e->message, p)) << "missing '" << p << "' in: " << e->message;
}

}  // namespace keel::cpu::testing
