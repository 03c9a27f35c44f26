#include "arg_checks.hpp"

#include "reduce.hpp"

#include <cstdio>
#include <cstdlib>
#include <string>

namespace keel::comm {

Error moved_from(const char* op) {
    return Error(KEEL_STATUS_FAILED_PRECONDITION, std::string("[Communicator::") + op +
                                                      "] a moved-from communicator: its group went with the move "
                                                      "(use the communicator it was moved into)");
}

void stop_moved_from(const char* op) noexcept {
    std::fprintf(stderr, "keel: %s\n", moved_from(op).message().c_str());
    std::fflush(stderr);
    std::abort();
}

Result<void> check_stream(const Communicator::Impl& impl, const char* op, const Stream& stream) {
    if (stream.empty())
        return Error(KEEL_STATUS_INVALID_ARGUMENT, impl.where(op) + ": the stream is empty");
    if (stream.device().name() != impl.device.name())
        return Error(KEEL_STATUS_INVALID_ARGUMENT, impl.where(op) + ": the stream is on " + stream.device().name() +
                                                       ", the communicator on " + impl.device.name());
    return {};
}

Result<void> check_view(const Communicator::Impl& impl, const char* op, const char* which, const DeviceView& view) {
    if (view.empty())
        return Error(KEEL_STATUS_INVALID_ARGUMENT, impl.where(op) + ": " + which +
                                                       " is an empty view (DeviceView(): no device, no memory)");
    if (!view.on(impl.device))
        return Error(KEEL_STATUS_INVALID_ARGUMENT, impl.where(op) + ": " + which + " is not memory of " +
                                                       impl.device.name());
    return {};
}

Result<void> check_same_size(const Communicator::Impl& impl, const char* op, const DeviceView& in,
                             const DeviceView& out) {
    if (in.size() != out.size())
        return Error(KEEL_STATUS_INVALID_ARGUMENT, impl.where(op) + ": in has " + bytes_text(in.size()) + ", out " +
                                                       bytes_text(out.size()));
    return {};
}

Result<void> check_dtype(const Communicator::Impl& impl, const char* op, keel_dtype dtype, ReduceOp reduce,
                         std::uint64_t bytes) {
    const std::size_t es = comm::dtype_size(dtype);
    if (es == 0 || comm::reduce_fn(dtype, reduce) == nullptr)
        return Error(KEEL_STATUS_INVALID_ARGUMENT, impl.where(op) + ": dtype " +
                                                       (es == 0 ? std::to_string(dtype) + " (not a keel dtype)"
                                                                : std::string(comm::dtype_name(dtype))) +
                                                       " cannot be reduced with " + comm::reduce_name(reduce));
    if (bytes % es != 0)
        return Error(KEEL_STATUS_INVALID_ARGUMENT, impl.where(op) + ": " + bytes_text(bytes) +
                                                       " is not a whole number of " + comm::dtype_name(dtype));
    return {};
}

Result<void> check_root(const Communicator::Impl& impl, const char* op, int root) {
    if (root < 0 || root >= impl.size)
        return Error(KEEL_STATUS_INVALID_ARGUMENT, impl.where(op) + ": root " + std::to_string(root) +
                                                       " is not a rank of 0.." + std::to_string(impl.size - 1));
    return {};
}

Result<void> check_parts(const Communicator::Impl& impl, const char* op, const char* whole_name,
                         const DeviceView& whole, const char* part_name, const DeviceView& part) {
    if (whole.size() != part.size() * static_cast<std::uint64_t>(impl.size))
        return Error(KEEL_STATUS_INVALID_ARGUMENT, impl.where(op) + ": " + whole_name + " has " +
                                                       bytes_text(whole.size()) + ", expected size " +
                                                       std::to_string(impl.size) + " x " + part_name + " (" +
                                                       bytes_text(part.size()) + ")");
    return {};
}

}  // namespace keel::comm
