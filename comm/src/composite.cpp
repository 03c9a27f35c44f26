// The collectives built from one batch of sends and receives (plus a device
// copy of this rank's own part): gather, scatter and all_to_all, even and
// uneven. One batch progresses together, so no rank waits on a pairing order;
// the batch's size exchange (CommOptions::check_sizes) checks that each
// rank's part matches its peer's; and they run on either engine, as
// send_recv does.
#include "arg_checks.hpp"
#include "engine.hpp"
#include "p2p.hpp"

#include <keel/comm.hpp>

#include <numeric>
#include <string>
#include <vector>

namespace keel {
namespace {

// [offset, offset + size) of `view`; the caller checked that it fits.
DeviceView part(const DeviceView& view, std::uint64_t offset, std::uint64_t size) {
    if (size == 0) return view.sub(0, 0).value();
    return view.sub(offset, size).value();
}

bool overlap(const DeviceView& a, const DeviceView& b) {
    return a.size() > 0 && b.size() > 0 && a.address() < b.address() + b.size() && b.address() < a.address() + a.size();
}

Error invalid(const Communicator::Impl& impl, const char* op, const std::string& what) {
    return Error(KEEL_STATUS_INVALID_ARGUMENT, impl.where(op) + ": " + what);
}

// The arguments gather (whole = out) and scatter (whole = in) share: a root
// among the ranks, this rank's part of memory of the device, and on the
// root the whole, size() parts apart from this rank's part.
Result<void> check_rooted_parts(const Communicator::Impl& impl, const char* op, int root, const char* part_name,
                                const DeviceView& part, const char* whole_name, const DeviceView& whole) {
    KEEL_TRY(comm::check_root(impl, op, root));
    KEEL_TRY(comm::check_view(impl, op, part_name, part));
    if (impl.rank != root) return {};
    KEEL_TRY(comm::check_view(impl, op, whole_name, whole));
    KEEL_TRY(comm::check_parts(impl, op, whole_name, whole, part_name, part));
    if (overlap(part, whole)) return invalid(impl, op, std::string(part_name) + " and " + whole_name + " overlap");
    return {};
}

// What every rank must agree on: the collective, its part size and root
// (all_to_all: the pairs' sizes are compared by the batch itself).
comm::Signature group_of(comm::OpKind kind, std::uint64_t part_bytes, int root) {
    return {static_cast<std::uint64_t>(kind), part_bytes, 0, static_cast<std::uint64_t>(root)};
}

// The batch, then this rank's own part copied on the device. Every rank
// runs one batch (size() > 1), so the group is compared like a collective.
Result<void> run(Communicator::Impl& impl, const Stream& stream, const std::vector<P2P>& ops,
                 const comm::Signature& group, DeviceView self_out, DeviceView self_in) {
    if (!ops.empty()) KEEL_TRY(comm::send_recv_as(impl, stream, ops, group));
    if (self_out.size() > 0) KEEL_TRY(stream.copy(self_out, self_in));
    return {};
}

}  // namespace

Result<void> Communicator::gather(const Stream& stream, DeviceView in, DeviceView out, int root) const {
    if (!impl_) return comm::moved_from("gather");
    Impl& impl = *impl_;
    KEEL_TRY(check_rooted_parts(impl, "gather", root, "in", in, "out", out));
    const std::uint64_t k = in.size();
    const comm::Signature group = group_of(comm::OpKind::gather, k, root);
    std::vector<P2P> ops;
    if (impl.rank != root) {
        ops.push_back(P2P::send(in, root));
        return run(impl, stream, ops, group, {}, {});
    }
    for (int r = 0; r < impl.size; ++r)
        if (r != impl.rank) ops.push_back(P2P::recv(part(out, k * static_cast<std::uint64_t>(r), k), r));
    return run(impl, stream, ops, group, part(out, k * static_cast<std::uint64_t>(impl.rank), k), in);
}

Result<void> Communicator::scatter(const Stream& stream, DeviceView in, DeviceView out, int root) const {
    if (!impl_) return comm::moved_from("scatter");
    Impl& impl = *impl_;
    KEEL_TRY(check_rooted_parts(impl, "scatter", root, "out", out, "in", in));
    const std::uint64_t k = out.size();
    const comm::Signature group = group_of(comm::OpKind::scatter, k, root);
    std::vector<P2P> ops;
    if (impl.rank != root) {
        ops.push_back(P2P::recv(out, root));
        return run(impl, stream, ops, group, {}, {});
    }
    for (int r = 0; r < impl.size; ++r)
        if (r != impl.rank) ops.push_back(P2P::send(part(in, k * static_cast<std::uint64_t>(r), k), r));
    return run(impl, stream, ops, group, out, part(in, k * static_cast<std::uint64_t>(impl.rank), k));
}

Result<void> Communicator::all_to_all(const Stream& stream, DeviceView in, DeviceView out) const {
    if (!impl_) return comm::moved_from("all_to_all");
    const Impl& impl = *impl_;
    constexpr const char* kOp = "all_to_all";
    const auto n = static_cast<std::uint64_t>(impl.size);
    if (in.size() != out.size() || in.size() % n != 0)
        return invalid(impl, kOp, "in has " + bytes_text(in.size()) + ", out " + bytes_text(out.size()) +
                                      ": both must have the same size, a multiple of " + std::to_string(n));
    const std::vector<std::uint64_t> sizes(static_cast<std::size_t>(n), in.size() / n);
    return all_to_all(stream, in, sizes, out, sizes);
}

Result<void> Communicator::all_to_all(const Stream& stream, DeviceView in, std::span<const std::uint64_t> in_sizes,
                                      DeviceView out, std::span<const std::uint64_t> out_sizes) const {
    if (!impl_) return comm::moved_from("all_to_all");
    Impl& impl = *impl_;
    constexpr const char* kOp = "all_to_all";
    const auto n = static_cast<std::size_t>(impl.size);
    if (in.empty() || out.empty()) return invalid(impl, kOp, "an empty view (DeviceView(): no device, no memory)");
    if (in_sizes.size() != n || out_sizes.size() != n)
        return invalid(impl, kOp, std::to_string(in_sizes.size()) + " in sizes and " +
                                      std::to_string(out_sizes.size()) + " out sizes, expected one per rank (" +
                                      std::to_string(n) + ")");
    const std::uint64_t in_total = std::accumulate(in_sizes.begin(), in_sizes.end(), std::uint64_t{0});
    const std::uint64_t out_total = std::accumulate(out_sizes.begin(), out_sizes.end(), std::uint64_t{0});
    if (in_total > in.size() || out_total > out.size())
        return invalid(impl, kOp, "the sizes add up to " + bytes_text(in_total) + " in and " + bytes_text(out_total) +
                                      " out, the views have " + bytes_text(in.size()) + " and " +
                                      bytes_text(out.size()));
    if (in_sizes[static_cast<std::size_t>(impl.rank)] != out_sizes[static_cast<std::size_t>(impl.rank)])
        return invalid(impl, kOp, "this rank's own part is " + bytes_text(in_sizes[static_cast<std::size_t>(impl.rank)]) +
                                      " in and " + bytes_text(out_sizes[static_cast<std::size_t>(impl.rank)]) + " out");
    if (overlap(in, out)) return invalid(impl, kOp, "in and out overlap");
    std::vector<P2P> ops;
    DeviceView self_in, self_out;
    std::uint64_t in_at = 0, out_at = 0;
    for (std::size_t r = 0; r < n; ++r) {
        const DeviceView send_part = part(in, in_at, in_sizes[r]);
        const DeviceView recv_part = part(out, out_at, out_sizes[r]);
        in_at += in_sizes[r];
        out_at += out_sizes[r];
        if (static_cast<int>(r) == impl.rank) {
            self_in = send_part;
            self_out = recv_part;
            continue;
        }
        ops.push_back(P2P::recv(recv_part, static_cast<int>(r)));
        ops.push_back(P2P::send(send_part, static_cast<int>(r)));
    }
    return run(impl, stream, ops, group_of(comm::OpKind::all_to_all, 0, 0), self_out, self_in);
}

}  // namespace keel
