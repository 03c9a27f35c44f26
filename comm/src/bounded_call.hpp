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
//
// Exit safety: the process's exit (return from main, exit()) first waits,
// up to 2 s, for every such call still running to finish and drop its
// captures, so that none runs among the statics exit destroys. A call still
// running after those 2 s ends the process at that point, with its exit
// status (stdio flushed; the exit hooks and destructors after keel's are
// skipped, as they could run under that call). No call starts once exit
// began (false). The library is never unloaded once a call ran.
[[nodiscard]] bool run_bounded(std::function<void()> call, std::chrono::milliseconds bound) noexcept;

}  // namespace keel::comm
