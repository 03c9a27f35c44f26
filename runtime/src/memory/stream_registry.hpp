// Which plugin streams the runtime's Stream objects have open, each with a
// generation, so that a buffer freed after a stream it was recorded on was
// closed knows that stream's work is done (closing waits for it) instead of
// calling the plugin on a dead handle, even when the plugin reuses the
// handle for a new stream.
//
// Threads: Sync (one process-wide table behind a shared mutex).
#pragma once

#include <keel/keel.h>

#include <cstdint>
#include <shared_mutex>

namespace keel::memory {

// 0: a handle the runtime did not open (a test's fake stream, a plugin
// stream driven through the C ABI): assumed open for as long as it is used.
using StreamGeneration = std::uint64_t;

// Called by Stream once the plugin created `stream`; returns its generation.
StreamGeneration register_stream(keel_stream stream);
// Called by Stream once the stream's work is done and before the plugin
// destroys it: waits for every OpenStream of it to go, so that no plugin
// call of the memory machinery is still using the handle.
void unregister_stream(keel_stream stream) noexcept;
// The generation of `stream` if the runtime has it open, else 0.
[[nodiscard]] StreamGeneration stream_generation(keel_stream stream) noexcept;

// Which stream under a handle a caller means.
enum class Match : std::uint8_t {
    exact,     // the stream of that generation only (a recorded use)
    or_newer,  // that one or a later one on the same handle (a pool's blocks serve both)
};

// A stream kept open: while this lives, the runtime cannot close it, so the
// plugin may be called on it (short calls only: enqueue or record, never a
// wait that other work decides). False when the stream was closed: closing
// waited for its work, so there is nothing left to wait for.
class OpenStream {
public:
    OpenStream() = default;
    [[nodiscard]] explicit operator bool() const noexcept { return open_; }

private:
    friend OpenStream keep_open(keel_stream stream, StreamGeneration generation, Match match) noexcept;
    bool open_ = false;
    std::shared_lock<std::shared_mutex> lock_;
};

// `stream` as it was at `generation` (0: a handle the runtime did not open,
// always open), kept open, or closed.
[[nodiscard]] OpenStream keep_open(keel_stream stream, StreamGeneration generation, Match match) noexcept;

}  // namespace keel::memory
