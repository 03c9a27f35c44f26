// The public names kept for one minor after a rename still compile and name
// the same thing.
#include <keel/keel.hpp>

#include <gtest/gtest.h>

#include <type_traits>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
static_assert(std::is_same_v<keel::DeviceMemory, keel::MemoryPool>, "DeviceMemory is MemoryPool's former name");
#pragma GCC diagnostic pop

TEST(DeprecatedNames, DeviceMemoryIsMemoryPool) { SUCCEED() << "checked at compile time"; }
