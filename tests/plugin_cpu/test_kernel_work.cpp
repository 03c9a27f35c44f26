// KernelWork, what a kernel's validation builds: declaring one buffer too
// many is reported as an error of the launch, never thrown.
#include "kernel_registry.hpp"

#include <keel/testing/result.hpp>

#include <gtest/gtest.h>

namespace keel::cpu {
namespace {

TEST(KernelWork, DeclaresBuffersInOrderAndRefusesOneTooManyWithAnError) {
    KernelWork work;
    for (std::size_t i = 0; i < KernelWork::kMaxBuffers; ++i) {
        KEEL_ASSERT_OK_AND_ASSIGN(std::size_t index,
                                  work.use(plugin::BufferArg{0x1000 * (i + 1), 64}, Access::read, "in"));
        EXPECT_EQ(index, i);
    }
    auto extra = work.use(plugin::BufferArg{0x99000, 64}, Access::write, "out");
    ASSERT_FALSE(extra.ok());
    EXPECT_EQ(extra.error().code(), KEEL_STATUS_INTERNAL);
    EXPECT_NE(extra.error().message().find("'out' is one too many"), std::string::npos) << extra.error().message();
    EXPECT_EQ(work.buffers().size(), KernelWork::kMaxBuffers);
    EXPECT_EQ(work.buffers()[3].addr, 0x4000u);
}

}  // namespace
}  // namespace keel::cpu
