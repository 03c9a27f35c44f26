// Event pools shared between processes: what zeEventPoolCreate needs of it.
#pragma once

#include "fake.hpp"

#include <cstdint>
#include <memory>

namespace fake_ze {

// `count` zeroed event states in a fresh memfd, mapped shared; null when the
// host is out of memory or descriptors.
[[nodiscard]] std::unique_ptr<SharedStates> make_shared_states(std::uint32_t count);

}  // namespace fake_ze
