// Event pools shared between processes: what zeEventPoolCreate needs of it.
#pragma once

#include "fake.hpp"

#include <cstdint>
#include <memory>

namespace fake_ze {

// `count` event states in a fresh memfd, mapped shared, signalled until
// zeEventCreate resets them (as Intel's driver reads fresh pool memory);
// null when the host is out of memory or descriptors.
[[nodiscard]] std::unique_ptr<SharedStates> make_shared_states(std::uint32_t count);

}  // namespace fake_ze
