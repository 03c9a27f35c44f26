// Communicator: argument checks, then each operation as staging copies, a
// gate that runs the Gloo call (engine.hpp says why).
#include "engine.hpp"
#include "native_comm.hpp"
#include "p2p.hpp"
#include "reduce.hpp"
#include "rendezvous.hpp"

#include <keel/comm.hpp>

#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/alltoall.h>
#include <gloo/broadcast.h>

#include <atomic>
#include <cstring>
#include <stdexcept>

namespace keel {
namespace {

using comm::Op;
using comm::StagingLease;

// Gloo sizes its elements by a type: a carrier of the dtype's width (the
// reduce function does the typed work).
template <class F>
void with_carrier(std::size_t element_size, F&& f) {
    switch (element_size) {
        case 1: return f(std::uint8_t{});
        case 2: return f(std::uint16_t{});
        case 4: return f(std::uint32_t{});
        default: return f(std::uint64_t{});
    }
}

std::string bytes_text(std::uint64_t n) { return std::to_string(n) + " bytes"; }

}  // namespace

Communicator::Communicator(std::shared_ptr<Impl> impl) noexcept : impl_(std::move(impl)) {}
Communicator::Communicator(Communicator&&) noexcept = default;
Communicator& Communicator::operator=(Communicator&&) noexcept = default;
Communicator::~Communicator() = default;

int Communicator::rank() const noexcept { return impl_->rank; }
int Communicator::size() const noexcept { return impl_->size; }
const Device& Communicator::device() const noexcept { return impl_->device; }
const std::string& Communicator::name() const noexcept { return impl_->name; }
bool Communicator::uses_native_engine() const noexcept { return impl_->native != nullptr; }
const std::string& Communicator::engine() const noexcept { return impl_->engine; }
void Communicator::abort() const noexcept {
    if (impl_->native) return impl_->native->abort();
    impl_->abort();
}
Result<void> Communicator::error() const { return impl_->native ? impl_->native->error() : impl_->error(); }

Result<Communicator> Communicator::create(const Device& device, const Store& store, int rank, int size,
                                          const CommOptions& options) {
    static std::atomic<int> created{0};
    if (size < 1 || rank < 0 || rank >= size)
        return Error(KEEL_STATUS_INVALID_ARGUMENT, "[Communicator::create] rank " + std::to_string(rank) +
                                                       " of size " + std::to_string(size) +
                                                       ": expected 0 <= rank < size");
    if (options.timeout.count() <= 0)
        return Error(KEEL_STATUS_INVALID_ARGUMENT, "[Communicator::create] the timeout must be positive");
    const std::string name =
        options.key_prefix.empty() ? "keel/comm/" + std::to_string(created.fetch_add(1)) : options.key_prefix;
    std::string engine;
    KEEL_TRY_ASSIGN(std::unique_ptr<comm::NativeComm> native,
                    comm::NativeComm::choose(device, store, rank, size, name, options, engine));
    if (native) {
        auto impl = std::make_shared<Impl>(device, rank, size, name, options.timeout, options.check_sizes);
        impl->native = std::move(native);
        impl->engine = std::move(engine);
        return Communicator(std::move(impl));
    }
    KEEL_TRY_ASSIGN(comm::Connected connected, comm::connect(store, name, rank, size, options));
    auto impl = std::make_shared<Impl>(device, rank, size, name, options.timeout, options.check_sizes);
    impl->engine = std::move(engine);
    impl->mesh = std::make_unique<comm::GlooMesh>(std::move(connected.context), std::move(connected.sockets));
    return Communicator(std::move(impl));
}

Result<Communicator> Communicator::create_from_env(const Device& device, const CommOptions& options) {
    KEEL_TRY_ASSIGN(RankInfo info, rank_from_env());
    KEEL_TRY_ASSIGN(Store store, Store::from_env());
    return create(device, store, info.rank, info.size, options);
}

// ---- argument checks ----------------------------------------------------

namespace {

Result<void> check_stream(const Communicator::Impl& impl, const char* op, const Stream& stream) {
    if (stream.empty())
        return Error(KEEL_STATUS_INVALID_ARGUMENT, impl.where(op) + ": the stream is empty");
    if (stream.device().name() != impl.device.name())
        return Error(KEEL_STATUS_INVALID_ARGUMENT, impl.where(op) + ": the stream is on " + stream.device().name() +
                                                       ", the communicator on " + impl.device.name());
    return {};
}

Result<void> check_view(const Communicator::Impl& impl, const char* op, const char* which, const DeviceView& view) {
    if (view.size() == 0) return {};
    if (!view.on(impl.device))
        return Error(KEEL_STATUS_INVALID_ARGUMENT, impl.where(op) + ": " + which + " is not memory of " +
                                                       impl.device.name());
    return {};
}

Result<void> check_dtype(const Communicator::Impl& impl, const char* op, keel_dtype dtype, ReduceOp reduce,
                         std::uint64_t bytes) {
    const std::size_t es = comm::dtype_size(dtype);
    if (es == 0 || comm::reduce_fn(dtype, reduce) == nullptr)
        return Error(KEEL_STATUS_INVALID_ARGUMENT, impl.where(op) + ": dtype " + std::to_string(dtype) +
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

}  // namespace

// ---- collectives --------------------------------------------------------

Result<void> Communicator::all_reduce(const Stream& stream, DeviceView in, DeviceView out, keel_dtype dtype,
                                      ReduceOp reduce) const {
    Impl& impl = *impl_;
    constexpr const char* kOp = "all_reduce";
    KEEL_TRY(check_stream(impl, kOp, stream));
    KEEL_TRY(check_view(impl, kOp, "in", in));
    KEEL_TRY(check_view(impl, kOp, "out", out));
    if (in.size() != out.size())
        return Error(KEEL_STATUS_INVALID_ARGUMENT, impl.where(kOp) + ": in has " + bytes_text(in.size()) +
                                                       ", out " + bytes_text(out.size()));
    KEEL_TRY(check_dtype(impl, kOp, dtype, reduce, in.size()));
    const std::uint64_t n = in.size();
    if (n == 0) return {};
    if (impl.native) return impl.native->all_reduce(stream, in, out, dtype, reduce);
    KEEL_TRY_ASSIGN(StagingLease lease, impl.staging->acquire(n));
    auto op = std::make_shared<Op>();
    op->what = kOp;
    op->detail = std::string(comm::dtype_name(dtype)) + " " + comm::reduce_name(reduce) + ", " + bytes_text(n);
    op->signature = {1, n, static_cast<std::uint64_t>(dtype), static_cast<std::uint64_t>(reduce)};
    const std::size_t es = comm::dtype_size(dtype);
    op->run = [mesh = impl.mesh.get(), data = lease.data(), n, es, fn = comm::reduce_fn(dtype, reduce), dtype,
               reduce, timeout = impl.timeout] {
        gloo::AllreduceOptions o(mesh->context());
        with_carrier(es, [&](auto carrier) {
            using T = decltype(carrier);
            o.setOutput(reinterpret_cast<T*>(data), n / es);
        });
        o.setReduceFunction(fn);
        o.setTimeout(timeout);
        gloo::allreduce(o);
        if (reduce == ReduceOp::avg) comm::finish_avg(dtype, data, n / es, mesh->size());
    };
    op->staging.push_back(std::move(lease));
    PinnedBuffer& staged = op->staging.back().buffer();
    return impl.enqueue(
        stream, op, [&] { return stream.copy(staged, in); }, [&] { return stream.copy(out, staged); });
}

Result<void> Communicator::all_reduce(const Stream& stream, DeviceView inout, keel_dtype dtype,
                                      ReduceOp reduce) const {
    return all_reduce(stream, inout, inout, dtype, reduce);
}

Result<void> Communicator::broadcast(const Stream& stream, DeviceView in, DeviceView out, int root) const {
    Impl& impl = *impl_;
    constexpr const char* kOp = "broadcast";
    KEEL_TRY(check_stream(impl, kOp, stream));
    KEEL_TRY(check_root(impl, kOp, root));
    KEEL_TRY(check_view(impl, kOp, "out", out));
    const bool is_root = impl.rank == root;
    if (is_root) {
        KEEL_TRY(check_view(impl, kOp, "in", in));
        if (in.size() != out.size())
            return Error(KEEL_STATUS_INVALID_ARGUMENT, impl.where(kOp) + ": in has " + bytes_text(in.size()) +
                                                           ", out " + bytes_text(out.size()));
    }
    const std::uint64_t n = out.size();
    if (n == 0) return {};
    if (impl.native) return impl.native->broadcast(stream, is_root ? in : out, out, root);
    KEEL_TRY_ASSIGN(StagingLease lease, impl.staging->acquire(n));
    auto op = std::make_shared<Op>();
    op->what = kOp;
    op->detail = "root " + std::to_string(root) + ", " + bytes_text(n);
    op->signature = {2, n, 0, static_cast<std::uint64_t>(root)};
    op->run = [mesh = impl.mesh.get(), data = lease.data(), n, root, timeout = impl.timeout] {
        gloo::BroadcastOptions o(mesh->context());
        o.setOutput(reinterpret_cast<std::uint8_t*>(data), n);
        o.setRoot(root);
        o.setTimeout(timeout);
        gloo::broadcast(o);
    };
    op->staging.push_back(std::move(lease));
    PinnedBuffer& staged = op->staging.back().buffer();
    const bool in_place = is_root && in.address() == out.address();
    return impl.enqueue(
        stream, op, [&]() -> Result<void> { return is_root ? stream.copy(staged, in) : Result<void>{}; },
        [&]() -> Result<void> { return in_place ? Result<void>{} : stream.copy(out, staged); });
}

Result<void> Communicator::broadcast(const Stream& stream, DeviceView inout, int root) const {
    return broadcast(stream, inout, inout, root);
}

Result<void> Communicator::all_gather(const Stream& stream, DeviceView in, DeviceView out) const {
    Impl& impl = *impl_;
    constexpr const char* kOp = "all_gather";
    KEEL_TRY(check_stream(impl, kOp, stream));
    KEEL_TRY(check_view(impl, kOp, "in", in));
    KEEL_TRY(check_view(impl, kOp, "out", out));
    const std::uint64_t n = in.size();
    if (out.size() != n * static_cast<std::uint64_t>(impl.size))
        return Error(KEEL_STATUS_INVALID_ARGUMENT, impl.where(kOp) + ": out has " + bytes_text(out.size()) +
                                                       ", expected size " + std::to_string(impl.size) + " x in (" +
                                                       bytes_text(n) + ")");
    if (n == 0) return {};
    if (impl.native) return impl.native->all_gather(stream, in, out);
    KEEL_TRY_ASSIGN(StagingLease lin, impl.staging->acquire(n));
    KEEL_TRY_ASSIGN(StagingLease lout, impl.staging->acquire(out.size()));
    auto op = std::make_shared<Op>();
    op->what = kOp;
    op->detail = bytes_text(n) + " per rank";
    op->signature = {3, n, 0, 0};
    op->run = [mesh = impl.mesh.get(), pin = lin.data(), pout = lout.data(), n, timeout = impl.timeout] {
        gloo::AllgatherOptions o(mesh->context());
        o.setInput(reinterpret_cast<std::uint8_t*>(pin), n);
        o.setOutput(reinterpret_cast<std::uint8_t*>(pout), n * static_cast<std::size_t>(mesh->size()));
        o.setTimeout(timeout);
        gloo::allgather(o);
    };
    op->staging.push_back(std::move(lin));
    PinnedBuffer& sin = op->staging.back().buffer();
    op->staging.push_back(std::move(lout));
    PinnedBuffer& sout = op->staging.back().buffer();
    return impl.enqueue(
        stream, op, [&] { return stream.copy(sin, in); }, [&] { return stream.copy(out, sout); });
}

Result<void> Communicator::reduce_scatter(const Stream& stream, DeviceView in, DeviceView out, keel_dtype dtype,
                                          ReduceOp reduce) const {
    Impl& impl = *impl_;
    constexpr const char* kOp = "reduce_scatter";
    KEEL_TRY(check_stream(impl, kOp, stream));
    KEEL_TRY(check_view(impl, kOp, "in", in));
    KEEL_TRY(check_view(impl, kOp, "out", out));
    const std::uint64_t k = out.size();
    if (in.size() != k * static_cast<std::uint64_t>(impl.size))
        return Error(KEEL_STATUS_INVALID_ARGUMENT, impl.where(kOp) + ": in has " + bytes_text(in.size()) +
                                                       ", expected size " + std::to_string(impl.size) + " x out (" +
                                                       bytes_text(k) + ")");
    KEEL_TRY(check_dtype(impl, kOp, dtype, reduce, k));
    if (k == 0) return {};
    if (impl.native) return impl.native->reduce_scatter(stream, in, out, dtype, reduce);
    const std::uint64_t total = in.size();
    KEEL_TRY_ASSIGN(StagingLease lin, impl.staging->acquire(total));
    KEEL_TRY_ASSIGN(StagingLease lall, impl.staging->acquire(total));
    KEEL_TRY_ASSIGN(StagingLease lres, impl.staging->acquire(k));
    auto op = std::make_shared<Op>();
    op->what = kOp;
    op->detail = std::string(comm::dtype_name(dtype)) + " " + comm::reduce_name(reduce) + ", " + bytes_text(k) +
                 " per rank";
    op->signature = {4, k, static_cast<std::uint64_t>(dtype), static_cast<std::uint64_t>(reduce)};
    const std::size_t es = comm::dtype_size(dtype);
    // Each rank receives every rank's part `rank` (all-to-all, (size-1)/size
    // of the data over the wire, as a ring reduce-scatter) and reduces them.
    op->run = [mesh = impl.mesh.get(), pin = lin.data(), pall = lall.data(), pres = lres.data(), total, k, es,
               fn = comm::reduce_fn(dtype, reduce), dtype, reduce, timeout = impl.timeout] {
        gloo::AlltoallOptions o(mesh->context());
        o.setInput(reinterpret_cast<std::uint8_t*>(pin), total);
        o.setOutput(reinterpret_cast<std::uint8_t*>(pall), total);
        o.setTimeout(timeout);
        gloo::alltoall(o);
        const std::size_t count = k / es;
        if (mesh->size() == 1) {
            std::memcpy(pres, pall, k);
        } else {
            fn(pres, pall, pall + k, count);
            for (int j = 2; j < mesh->size(); ++j) fn(pres, pres, pall + static_cast<std::size_t>(j) * k, count);
        }
        if (reduce == ReduceOp::avg) comm::finish_avg(dtype, pres, count, mesh->size());
    };
    op->staging.push_back(std::move(lin));
    PinnedBuffer& sin = op->staging.back().buffer();
    op->staging.push_back(std::move(lall));
    op->staging.push_back(std::move(lres));
    PinnedBuffer& sres = op->staging.back().buffer();
    return impl.enqueue(
        stream, op, [&] { return stream.copy(sin, in); }, [&] { return stream.copy(out, sres); });
}

// ---- point to point -----------------------------------------------------

Result<void> Communicator::send_recv(const Stream& stream, std::span<const P2P> ops) const {
    Impl& impl = *impl_;
    constexpr const char* kOp = "send_recv";
    KEEL_TRY(check_stream(impl, kOp, stream));
    std::string detail;
    for (const P2P& p : ops) {
        const bool send = p.kind == P2P::Kind::send;
        if (p.peer < 0 || p.peer >= impl.size || p.peer == impl.rank)
            return Error(KEEL_STATUS_INVALID_ARGUMENT, impl.where(kOp) + ": peer " + std::to_string(p.peer) +
                                                           " is not another rank of 0.." +
                                                           std::to_string(impl.size - 1));
        KEEL_TRY(check_view(impl, kOp, send ? "a send's view" : "a recv's view", p.view));
        if (!detail.empty()) detail += ", ";
        detail += (send ? "send to " : "recv from ") + std::to_string(p.peer) + " " + bytes_text(p.view.size());
    }
    if (impl.native) return impl.native->send_recv(stream, ops);
    const bool check = impl.check_sizes;
    auto op = std::make_shared<Op>();
    op->what = kOp;
    op->detail = detail;
    op->collective = false;
    auto entries = std::make_shared<std::vector<comm::Transfer>>();
    std::vector<std::pair<PinnedBuffer*, DeviceView>> sends, recvs;
    for (const P2P& p : ops) {
        // Checked, an empty message still meets its peer's: its size is compared.
        if (p.view.size() == 0 && !check) continue;
        const bool send = p.kind == P2P::Kind::send;
        std::byte* data = nullptr;
        if (p.view.size() > 0) {
            KEEL_TRY_ASSIGN(StagingLease lease, impl.staging->acquire(p.view.size()));
            data = lease.data();
            op->staging.push_back(std::move(lease));
            (send ? sends : recvs).emplace_back(&op->staging.back().buffer(), p.view);
        }
        entries->push_back({send, p.peer, 0, data, p.view.size()});
    }
    if (entries->empty()) return {};
    Impl* engine = impl_.get();  // outlives the gate that runs `run` (~Impl waits for it)
    op->run = [engine, entries, check] {
        if (check) comm::compare_sizes(*engine, *entries);
        comm::transfer(*engine, *entries);
    };
    // Slots are taken in the enqueue order (stage_in runs under it), so the
    // k-th message between two ranks matches on both sides.
    return impl.enqueue(
        stream, op,
        [&]() -> Result<void> {
            for (auto& [pinned, view] : sends) KEEL_TRY(stream.copy(*pinned, view));
            for (comm::Transfer& e : *entries)
                e.slot = e.send ? engine->next_send_slot(e.peer) : engine->next_recv_slot(e.peer);
            return {};
        },
        [&]() -> Result<void> {
            for (auto& [pinned, view] : recvs) KEEL_TRY(stream.copy(view, *pinned));
            return {};
        });
}

Result<void> Communicator::send(const Stream& stream, DeviceView view, int peer) const {
    const P2P one = P2P::send(view, peer);
    return send_recv(stream, std::span(&one, 1));
}

Result<void> Communicator::recv(const Stream& stream, DeviceView view, int peer) const {
    const P2P one = P2P::recv(view, peer);
    return send_recv(stream, std::span(&one, 1));
}

Result<void> Communicator::send(const Stream& stream, Buffer&& buffer, int peer) const {
    Buffer held = std::move(buffer);
    KEEL_TRY(send(stream, held.view(), peer));
    // After the send on the same stream: the stream passes this point only
    // once the send ran, so the buffer goes no earlier.
    return stream.hold(std::move(held));
}

Result<void> Communicator::send_recv(const Stream& stream, std::span<const P2P> ops, std::vector<Buffer>&& keep) const {
    std::vector<Buffer> held = std::move(keep);
    KEEL_TRY(send_recv(stream, ops));
    if (held.empty()) return {};
    return stream.hold(std::move(held));
}

}  // namespace keel
