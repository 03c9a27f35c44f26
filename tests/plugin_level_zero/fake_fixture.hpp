// Tests of the plugin on the fake Level Zero driver (testing/fake_level_zero),
// loaded by the real loader through ZE_ENABLE_ALT_DRIVERS (set by ctest).
#pragma once

#include "level_zero_test.hpp"

#include <fake_ze/control.h>

#include <cstdlib>
#include <memory>

namespace keel::level_zero_test {

class OnFakeDriver : public ::testing::Test {
protected:
    void SetUp() override {
        ASSERT_TRUE(env::foreign("ZE_ENABLE_ALT_DRIVERS")) << "run through ctest: it names the fake driver";
        fake_ze_reset();
        plugin_ = std::make_unique<LoadedPlugin>(plugin_path());
        ASSERT_FALSE(plugin_->init_error()) << plugin_->init_error()->message;
        ASSERT_GE(plugin_->device_count(), 1u) << plugin_->status();
    }
    void TearDown() override {
        plugin_.reset();
        fake_ze_reset();
    }

    [[nodiscard]] const keel_plugin_api& api() const { return plugin_->api(); }
    [[nodiscard]] keel_device device() const { return plugin_->device(); }
    [[nodiscard]] LoadedPlugin& plugin() { return *plugin_; }

    // Device `index` of the plugin (null, and a test failure, if it has none).
    [[nodiscard]] keel_device device(std::uint32_t index) const {
        keel_device d = nullptr;
        KEEL_EXPECT_OK(api().device_get(index, &d));
        return d;
    }
    [[nodiscard]] keel_stream new_stream() {
        keel_stream s = nullptr;
        KEEL_EXPECT_OK(api().stream_create(device(), 0, &s));
        return s;
    }
    [[nodiscard]] keel_device_addr new_buffer(std::uint64_t size) {
        keel_device_addr a = 0;
        KEEL_EXPECT_OK(api().device_alloc(device(), size, &a));
        return a;
    }

private:
    std::unique_ptr<LoadedPlugin> plugin_;
};

}  // namespace keel::level_zero_test
