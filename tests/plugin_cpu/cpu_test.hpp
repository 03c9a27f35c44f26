// Shared fixture of the CPU plugin tests: a freshly initialised plugin per
// test (so each test may choose its KEEL_CPU_* settings), and helpers that
// make the C table pleasant to drive.
#pragma once

#include <keel/testing/gate.hpp>
#include <keel/testing/launch_args.hpp>
#include <keel/testing/loaded_plugin.hpp>
#include <keel/testing/result.hpp>
#include <keel/testing/scoped_env.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <deque>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace keel::cpu::testing {

using keel::testing::buffer_arg;
using keel::testing::CError;
using keel::testing::f32_arg;
using keel::testing::i64_arg;
using keel::testing::LaunchArgs;
using keel::testing::Gate;
using keel::testing::ScopedEnv;
using keel::testing::take;

// libkeel_cpu.so loaded by its C table, with `env` set while it initialises.
class LoadedPlugin : public keel::testing::LoadedPlugin {
public:
    explicit LoadedPlugin(const ScopedEnv::Vars& env = {}, std::uint32_t abi_major = KEEL_ABI_VERSION_MAJOR)
        : keel::testing::LoadedPlugin(KEEL_CPU_PLUGIN_PATH, Options{env, abi_major}) {}
};

// Collects the order in which host functions ran.
class Recorder {
public:
    // A user_data for `value` (stable address for the recorder's lifetime).
    void* slot(int value) {
        std::lock_guard lock(mutex_);
        slots_.push_back({this, value});
        return &slots_.back();
    }
    static void fn(void* slot, keel_status status) {
        auto* s = static_cast<Slot*>(slot);
        std::lock_guard lock(s->self->mutex_);
        s->self->seen_.push_back(s->value);
        s->self->statuses_.push_back(status);
        s->self->threads_.push_back(std::this_thread::get_id());
    }
    std::vector<int> seen() const {
        std::lock_guard lock(mutex_);
        return seen_;
    }
    std::vector<keel_status> statuses() const {
        std::lock_guard lock(mutex_);
        return statuses_;
    }
    std::vector<std::thread::id> threads() const {
        std::lock_guard lock(mutex_);
        return threads_;
    }

private:
    struct Slot {
        Recorder* self;
        int value;
    };
    mutable std::mutex mutex_;
    std::deque<Slot> slots_;
    std::vector<int> seen_;
    std::vector<keel_status> statuses_;
    std::vector<std::thread::id> threads_;
};

// The handles a test made on a loaded plugin, released by release() in
// whatever state the test left them (a failed test must not hang or leak).
class Handles {
public:
    const keel_plugin_api& api() const { return plugin_->api(); }
    keel_device dev() const { return plugin_->device(); }
    LoadedPlugin& plugin() { return *plugin_; }

    // Handles released by release() (tests may release earlier with forget_*).
    keel_stream stream() {
        keel_stream s = nullptr;
        auto e = take(api().stream_create(dev(), 0, &s));
        EXPECT_FALSE(e) << e->message;
        streams_.push_back(s);
        return s;
    }
    keel_event event(uint32_t flags = KEEL_EVENT_DEFAULT) {
        keel_event ev = nullptr;
        auto e = take(api().event_create(dev(), flags, &ev));
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
    void forget_stream(keel_stream s) { std::erase(streams_, s); }

    // Blocks `s`'s worker until the returned gate opens. The gate is kept
    // until every stream is destroyed.
    Gate* block(keel_stream s) {
        gates_.push_back(std::make_unique<Gate>());
        Gate* g = gates_.back().get();
        KEEL_EXPECT_OK(g->hold(api(), s));
        return g;
    }

    keel_kernel kernel(const char* name) {
        keel_kernel k = nullptr;
        auto e = take(api().kernel_get(dev(), name, &k));
        EXPECT_FALSE(e) << e->message;
        return k;
    }
    // fill(out, value)
    std::optional<CError> fill(keel_stream s, keel_device_addr out, uint64_t bytes, float value) {
        const LaunchArgs l({buffer_arg(out, bytes), f32_arg(value)});
        return take(api().kernel_launch(s, kernel("fill"), l.get()));
    }
    // y = alpha * x + y
    std::optional<CError> axpy(keel_stream s, float alpha, keel_device_addr x, keel_device_addr y, uint64_t bytes) {
        const LaunchArgs l({f32_arg(alpha), buffer_arg(x, bytes), buffer_arg(y, bytes)});
        return take(api().kernel_launch(s, kernel("axpy"), l.get()));
    }

    std::vector<float> read_f32(keel_stream s, keel_device_addr a, size_t n) {
        std::vector<float> out(n);
        auto e = take(api().memcpy_d2h(s, out.data(), a, n * sizeof(float)));
        EXPECT_FALSE(e) << e->message;
        e = take(api().stream_synchronize(s));
        EXPECT_FALSE(e) << e->message;
        return out;
    }
    // Messages the plugin logged at `level` or above.
    std::vector<std::string> logs_at_least(keel_log_level level) const {
        std::vector<std::string> out;
        for (const auto& l : plugin_->logs())
            if (l.level >= level) out.push_back(l.message);
        return out;
    }

protected:
    void attach(LoadedPlugin& plugin) { plugin_ = &plugin; }
    // Opens the gates and releases every handle, ignoring errors.
    void release() {
        for (auto& g : gates_) g->open();
        for (keel_event e : events_) take(api().event_destroy(e));
        for (keel_stream s : streams_) take(api().stream_destroy(s));
        for (keel_device_addr a : allocations_) take(api().device_free(dev(), a));
        for (void* p : pinned_) take(api().host_free(dev(), p));
    }
    // After every worker that could wait on a gate is gone.
    void drop_gates() { gates_.clear(); }

    std::vector<keel_stream> streams_;

private:
    LoadedPlugin* plugin_ = nullptr;
    std::vector<keel_event> events_;
    std::vector<keel_device_addr> allocations_;
    std::vector<void*> pinned_;
    std::vector<std::unique_ptr<Gate>> gates_;
};

// A freshly initialised plugin per test.
class CpuPluginTest : public ::testing::Test, public Handles {
protected:
    // Override to initialise the plugin with KEEL_CPU_* settings.
    virtual ScopedEnv::Vars environment() const { return {}; }

    void SetUp() override {
        owned_ = std::make_unique<LoadedPlugin>(environment());
        ASSERT_FALSE(owned_->init_error()) << owned_->init_error()->message;
        attach(*owned_);
    }
    void TearDown() override {
        if (!owned_ || owned_->init_error()) return;
        release();
        owned_.reset();
        drop_gates();
    }

private:
    std::unique_ptr<LoadedPlugin> owned_;
};

}  // namespace keel::cpu::testing
