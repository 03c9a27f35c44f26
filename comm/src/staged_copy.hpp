// The staging copies of the generic path, enqueued through the plugin's own
// copy entries. Stream::copy with a PinnedBuffer would also record a point
// after each copy so that the buffer is never freed under it; the
// communicator's staging needs none: an operation's blocks are held on its
// stream until the stream passed its last copy (one hold per operation),
// which saves two event records per operation.
#pragma once

#include <keel/keel.hpp>

#include <cstddef>
#include <span>

namespace keel::comm {

// A copy between a device view and host memory that stays valid (and, for
// an input, unchanged) until the stream has run it.
struct StagedCopy {
    std::byte* host;
    DeviceView view;
};

// Device -> host copies of `copies`, in order, on `stream`.
[[nodiscard]] Result<void> enqueue_inputs(const Stream& stream, std::span<const StagedCopy> copies);
// Host -> device copies of `copies`, in order, on `stream`.
[[nodiscard]] Result<void> enqueue_outputs(const Stream& stream, std::span<const StagedCopy> copies);

}  // namespace keel::comm
