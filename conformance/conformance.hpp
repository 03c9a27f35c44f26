// The device conformance suite: one GoogleTest suite, `Conformance`,
// parametrised over every device that loads. Each file adds TEST_Ps to it;
// conformance_main.cpp instantiates it once for all of them.
//
// Devices come from one Runtime for the whole run: the default search path
// (KEEL_PLUGIN_PATH, then keel/plugins beside the runtime library) plus
// KEEL_CONFORMANCE_PLUGIN_PATH given at build time (the fake test plugin,
// unless switched off), or what keel-cts was told to test.
//
// Lifetimes: an ASSERT that fails returns at once, destroying the test's
// locals in reverse order while its streams may still have work queued (a
// plugin under test may fail any call). So everything a stream's work
// touches is declared BEFORE the stream (host-function state, raw and
// pinned memory): the stream is destroyed first, and destroying it waits
// for its work. Buffers, HostCopy and moved-in vectors are safe anywhere
// (stream-ordered or owned by the copy). keel-cts's fault injection
// (tests/cts) runs the suite with each plugin entry failing, under ASan.
//
// A device that differs from the contract declares it INSIDE the test with
// KEEL_KNOWN_DIFFERENCE(condition, reason): the test is then skipped on that
// device, with the reason, instead of being deleted.
//
// Every TEST_P starts with KEEL_RULE (rule.hpp): the identifier of the
// keel.h rule it checks and the minor keel.h gives it.
#pragma once

#include "rule.hpp"

#include <keel/keel.hpp>
#include <keel/testing/gate.hpp>
#include <keel/testing/result.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace keel::conformance {

// Where the suite's Runtime looks for plugins. Call it before the tests
// are registered (keel-cts does, from its command line); without it, the
// build's default search path and KEEL_CONFORMANCE_PLUGIN_PATH.
void use_runtime_options(RuntimeOptions options);
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
    // The minor of keel.h the device's plugin declares (its abi_minor).
    [[nodiscard]] std::uint32_t plugin_minor() const;
    // KEEL_RULE's work: records the rule; the reason to skip when the plugin
    // declares a minor older than `minor`.
    [[nodiscard]] std::optional<std::string> cite_rule(std::uint32_t minor, const char* rule, RuleKind kind);
    // Fails a check that cited no rule.
    void TearDown() override;

private:
    bool cited_ = false;
};

// The test name part for a device: "cpu:0" -> "cpu_0".
std::string instance_name(const ::testing::TestParamInfo<std::string>& info);

}  // namespace keel::conformance

// `var` = the kernel `kernel_name` of the device under test. The test is skipped,
// with the reason, when the plugin lacks the optional kernel entries
// (kernel_get/kernel_launch): an absent optional entry is never a failure.
// With them, the suite's kernels (fill, axpy) are required.
#define KEEL_FIND_KERNEL_OR_SKIP(var, kernel_name)                                           \
    auto var##_found = ::keel::Kernel::find(device(), kernel_name);                                \
    if (!var##_found.ok() && var##_found.error().code() == KEEL_STATUS_UNIMPLEMENTED)         \
        GTEST_SKIP() << device().name() << " has no kernels (optional entry absent): "        \
                     << var##_found.error().message();                                         \
    KEEL_ASSERT_OK_AND_ASSIGN(::keel::Kernel var, std::move(var##_found))

// Declares that the device under test differs from the contract here.
#define KEEL_KNOWN_DIFFERENCE(condition, reason)                                          \
    if (condition)                                                                         \
    GTEST_SKIP() << "known difference of " << device().name() << ": " << reason

namespace keel::conformance {

using keel::testing::Gate;
using Bytes = std::vector<std::uint8_t>;

// `n` bytes that differ from their neighbours and, by `seed`, from another
// pattern's: what a copy test writes and expects back.
[[nodiscard]] inline Bytes pattern(std::size_t n, std::uint8_t seed) {
    Bytes b(n);
    for (std::size_t i = 0; i < n; ++i) b[i] = static_cast<std::uint8_t>(i * 31 + seed);
    return b;
}

// The bytes of `view`, read through `stream` (waits for them).
[[nodiscard]] inline Result<Bytes> read_bytes(const Stream& stream, DeviceView view) {
    KEEL_TRY_ASSIGN(HostFuture<std::uint8_t> future, stream.copy_to_vector<std::uint8_t>(view));
    return std::move(future).get();
}

}  // namespace keel::conformance
