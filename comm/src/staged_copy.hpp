// The staging copies of the generic path, through the runtime's own
// Stream::copy in every mode (its checks at the call, its host-function
// guard, its record of the pinned block's use), so that keel's checks see
// the same path as production.
#pragma once

#include <keel/keel.hpp>

#include <span>

namespace keel::comm {

// A copy between a device view and a pinned staging block of its size that
// stays valid (and, for an input, unchanged) until the stream has run it.
struct StagedCopy {
    PinnedBuffer* staging;
    DeviceView view;
};

enum class StagedDirection {
    to_staging,    // device -> pinned: an operation's inputs
    from_staging,  // pinned -> device: its outputs
};

// The copies of `copies`, in order, on `stream`; the first error stops them.
[[nodiscard]] Result<void> enqueue_staged_copies(const Stream& stream, std::span<const StagedCopy> copies,
                                                 StagedDirection direction);

}  // namespace keel::comm
