// Tests of the plugin on the fake Level Zero driver (tests/level_zero_fake),
// loaded by the real loader through ZE_ENABLE_ALT_DRIVERS (set by ctest).
#pragma once

#include "plugin_fixture.hpp"

#include <fake_ze/control.h>

#include <cstdlib>

namespace keel::level_zero_test {

class OnFakeDriver : public ::testing::Test {
protected:
    void SetUp() override {
        ASSERT_NE(std::getenv("ZE_ENABLE_ALT_DRIVERS"), nullptr) << "run through ctest: it names the fake driver";
        fake_ze_reset();
        plugin_ = std::make_unique<Plugin>();
        ASSERT_NE(plugin_->api(), nullptr);
        ASSERT_GE(plugin_->device_count(), 1u) << plugin_->status();
        device_ = plugin_->device(0);
    }
    void TearDown() override {
        plugin_.reset();
        fake_ze_reset();
    }

    [[nodiscard]] const keel_plugin_api& api() const { return *plugin_->api(); }
    [[nodiscard]] keel_device device() const { return device_; }
    [[nodiscard]] Plugin& plugin() { return *plugin_; }

    [[nodiscard]] keel_stream new_stream() {
        keel_stream s = nullptr;
        EXPECT_TRUE(succeeded(api().stream_create(device_, 0, &s)));
        return s;
    }
    [[nodiscard]] keel_device_addr new_buffer(std::uint64_t size) {
        keel_device_addr a = 0;
        EXPECT_TRUE(succeeded(api().device_alloc(device_, size, &a)));
        return a;
    }

private:
    std::unique_ptr<Plugin> plugin_;
    keel_device device_ = nullptr;
};

}  // namespace keel::level_zero_test
