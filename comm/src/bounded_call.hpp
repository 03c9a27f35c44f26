// A call that may block for as long as something outside keel takes (a
// store that is gone, a stream's error read from a host function's thread),
// waited for at most a bound.
#pragma once

#include <chrono>
#include <functional>

namespace keel::comm {

// Runs `call` on a thread of its own and waits at most `bound` for it: true
// when it finished. One that did not is left to finish on its own, so
// `call` must own everything it touches.
[[nodiscard]] bool run_bounded(std::function<void()> call, std::chrono::milliseconds bound) noexcept;

}  // namespace keel::comm
