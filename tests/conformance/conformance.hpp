// The device conformance suite: one GoogleTest suite, `Conformance`,
// parametrised over every device that loads. Each file adds TEST_Ps to it;
// conformance_main.cpp instantiates it once for all of them.
//
// Devices come from one Runtime for the whole run: the default search path
// (build tree, install, KEEL_PLUGIN_PATH) plus KEEL_CONFORMANCE_PLUGIN_PATH
// given at build time (the fake test plugin, unless switched off).
//
// A device that differs from the contract declares it INSIDE the test with
// KEEL_KNOWN_DIFFERENCE(condition, reason): the test is then skipped on that
// device, with the reason, instead of being deleted.
#pragma once

#include <keel/keel.hpp>
#include <keel/testing/gate.hpp>
#include <keel/testing/result.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace keel::conformance {

// The Runtime shared by the suite (created on first use).
const Runtime& runtime();
// Names of every device of runtime(), for the parametrisation.
std::vector<std::string> device_names();

class Conformance : public ::testing::TestWithParam<std::string> {
protected:
    // The device under test.
    [[nodiscard]] const Device& device() const;
    // Another device (of any plugin), or null when only one device loaded.
    [[nodiscard]] const Device* other_device() const;
};

// The test name part for a device: "cpu:0" -> "cpu_0".
std::string instance_name(const ::testing::TestParamInfo<std::string>& info);

}  // namespace keel::conformance

// Declares that the device under test differs from the contract here.
#define KEEL_KNOWN_DIFFERENCE(condition, reason)                                          \
    if (condition)                                                                         \
    GTEST_SKIP() << "known difference of " << device().name() << ": " << reason

namespace keel::conformance {

using keel::testing::Gate;
using Bytes = std::vector<std::uint8_t>;

// The bytes of `view`, read through `stream` (waits for them).
[[nodiscard]] inline Result<Bytes> read_bytes(const Stream& stream, DeviceView view) {
    KEEL_TRY_ASSIGN(HostFuture<std::uint8_t> future, stream.copy_to_vector<std::uint8_t>(view));
    return std::move(future).get();
}

}  // namespace keel::conformance
