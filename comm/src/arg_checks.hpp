// The argument checks every operation of Communicator shares, so that a
// mistake gets the same words whichever operation it is made in. Each
// returns INVALID_ARGUMENT, the message starting with Impl::where(op).
#pragma once

#include "engine.hpp"

namespace keel::comm {

// A call on a moved-from communicator (its group went with the move):
// FAILED_PRECONDITION naming the call; stop_moved_from prints it and stops
// the program, for the accessors that have no error to return.
[[nodiscard]] Error moved_from(const char* op);
[[noreturn]] void stop_moved_from(const char* op) noexcept;

// The stream is not empty and on the communicator's device.
[[nodiscard]] Result<void> check_stream(const Communicator::Impl& impl, const char* op, const Stream& stream);
// `view` (`which` names it: "in") is memory of the communicator's device.
[[nodiscard]] Result<void> check_view(const Communicator::Impl& impl, const char* op, const char* which,
                                      const DeviceView& view);
// in and out of an operation that writes what it reads: the same size.
[[nodiscard]] Result<void> check_same_size(const Communicator::Impl& impl, const char* op, const DeviceView& in,
                                           const DeviceView& out);
// `dtype` can be reduced with `reduce`, and `bytes` is a whole number of it.
[[nodiscard]] Result<void> check_dtype(const Communicator::Impl& impl, const char* op, keel_dtype dtype,
                                       ReduceOp reduce, std::uint64_t bytes);
// `root` is a rank of the communicator.
[[nodiscard]] Result<void> check_root(const Communicator::Impl& impl, const char* op, int root);
// `whole` (`whole_name`) holds size() parts of `part`'s size (`part_name`):
// the gathered out of all_gather and gather, the scattered in of
// reduce_scatter and scatter.
[[nodiscard]] Result<void> check_parts(const Communicator::Impl& impl, const char* op, const char* whole_name,
                                       const DeviceView& whole, const char* part_name, const DeviceView& part);

}  // namespace keel::comm
