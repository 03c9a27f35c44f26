// The copies that read or write a PinnedBuffer and may still be pending, so
// that its memory goes back to the plugin only once none of them runs any
// more: dropping the buffer after a failed call (an error path that skipped
// its synchronisation) must not free memory a queued copy still uses. Like
// cudaFreeHost, the free waits for that work; it never waits for anything
// else.
#pragma once

#include "memory/memory_core.hpp"

#include <keel/keel.h>
#include <keel/result.hpp>

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

namespace keel::memory {

// Sync: copies on several streams (from several threads) may note uses at
// once; wait() runs once, from the owner's destruction.
class PinnedUses {
public:
    PinnedUses() = default;
    PinnedUses(const PinnedUses&) = delete;
    PinnedUses& operator=(const PinnedUses&) = delete;
    PinnedUses(PinnedUses&&) = delete;
    PinnedUses& operator=(PinnedUses&&) = delete;
    ~PinnedUses() { wait(); }

    // Called right after a copy was enqueued on `stream`: notes the point
    // after it. Without one (no event, or a failed stream refusing the
    // record) it waits for the stream instead, which covers the copy.
    [[nodiscard]] Result<void> note(const std::shared_ptr<MemoryCore>& core, keel_stream stream);

    // Blocks until every noted copy stopped running (a failed stream's
    // synchronisation waits for its work too: keel.h 1.3).
    void wait() noexcept;

private:
    struct Use {
        std::shared_ptr<MemoryCore> core;
        keel_stream stream = nullptr;
        keel_event event = nullptr;
        std::uint64_t seq = 0;
    };
    static constexpr std::size_t kPruneAbove = 4;
    [[nodiscard]] static bool passed(Use& use) noexcept;
    // Gives `use`'s event back once its point is reached, without waiting.
    static void retire(Use& use) noexcept;

    std::mutex mu_;
    // At most one per stream (a later point covers an earlier one); those
    // seen complete are dropped at the next note().
    std::vector<Use> uses_;
};

}  // namespace keel::memory
