// The staging copies of the generic path. Normally enqueued through the
// plugin's own copy entries: Stream::copy with a PinnedBuffer would also
// record a point after each copy so that the buffer is never freed under it,
// and the communicator's staging needs none (an operation's blocks are held
// on its stream until the stream passed its last copy: one hold per
// operation), which saves two event records per operation. With
// `checked` (keel's checks on: KEEL_CHECK) they go through Stream::copy,
// whose view checks at the call then apply to them too.
#pragma once

#include <keel/keel.hpp>

#include <span>

namespace keel::comm {

// A copy between a device view and host memory that stays valid (and, for
// an input, unchanged) until the stream has run it.
struct StagedCopy {
    PinnedBuffer* staging;
    DeviceView view;
};

// Device -> host copies of `copies`, in order, on `stream`.
[[nodiscard]] Result<void> enqueue_inputs(const Stream& stream, std::span<const StagedCopy> copies, bool checked);
// Host -> device copies of `copies`, in order, on `stream`.
[[nodiscard]] Result<void> enqueue_outputs(const Stream& stream, std::span<const StagedCopy> copies, bool checked);

}  // namespace keel::comm
