// Communicator: argument checks, then each operation as staging copies, a
// gate that runs the Gloo call (engine.hpp says why).
#include "arg_checks.hpp"
#include "engine.hpp"
#include "p2p.hpp"
#include "sigpipe_guard.hpp"
#include "native_comm.hpp"
#include "reduce.hpp"
#include "rendezvous.hpp"
#include "store_functions.hpp"

#include <keel/comm.hpp>
#include <keel/environment.hpp>
#include <keel/trace.hpp>

#include <atomic>
#include <optional>
#include <string_view>

namespace keel {
namespace {

using comm::check_dtype;
using comm::check_parts;
using comm::check_root;
using comm::check_same_size;
using comm::check_stream;
using comm::check_view;
using comm::Op;
using comm::OpKind;
using comm::StagedCopy;


// A device address the host may dereference (Impl::host_addressable).
std::byte* host_address(const DeviceView& view) noexcept {
    return reinterpret_cast<std::byte*>(static_cast<std::uintptr_t>(view.address()));
}

std::byte* bytes_of(PinnedBuffer* staged) noexcept { return static_cast<std::byte*>(staged->data()); }

// On a host-addressable device: Gloo works on `in` and `out` in place, the
// operation is its gate alone (no staging, no copies).
Result<void> enqueue_in_place(Communicator::Impl& impl, const std::unique_lock<std::mutex>& order,
                              const Stream& stream, std::shared_ptr<Op> op, const DeviceView& in,
                              const DeviceView& out) {
    op->in = host_address(in);
    op->out = host_address(out);
    return impl.enqueue(order, stream, std::move(op), {}, {});
}

// How a collective stages its in and out: one block both use (the
// operation runs in place on it) or a block each, and which of the two
// copies it needs on this rank.
struct StagingPlan {
    bool one_block = true;
    bool copy_in = true;
    bool copy_out = true;
};

// Stages `in` and `out` as `plan` says, points the operation at the
// staging and enqueues it: `in` copied to the staging before its gate, the
// staging copied to `out` after it.
Result<void> enqueue_staged(Communicator::Impl& impl, const std::unique_lock<std::mutex>& order, const Stream& stream,
                            std::shared_ptr<Op> op, const DeviceView& in, const DeviceView& out, StagingPlan plan) {
    op->staging.reserve(op->staging.size() + (plan.one_block ? 1 : 2));
    KEEL_TRY_ASSIGN(PinnedBuffer* staged_in, impl.stage(stream, *op, in.size()));
    PinnedBuffer* staged_out = staged_in;
    if (!plan.one_block) {
        KEEL_TRY_ASSIGN(staged_out, impl.stage(stream, *op, out.size()));
    }
    op->in = bytes_of(staged_in);
    op->out = bytes_of(staged_out);
    const StagedCopy copy_in{staged_in, in}, copy_out{staged_out, out};
    return impl.enqueue(order, stream, std::move(op),
                        plan.copy_in ? std::span<const StagedCopy>(&copy_in, 1) : std::span<const StagedCopy>(),
                        plan.copy_out ? std::span<const StagedCopy>(&copy_out, 1) : std::span<const StagedCopy>());
}

}  // namespace

Communicator::Communicator(std::shared_ptr<Impl> impl) noexcept : impl_(std::move(impl)) {}
Communicator::Communicator(Communicator&&) noexcept = default;
Communicator& Communicator::operator=(Communicator&&) noexcept = default;
Communicator::~Communicator() = default;

// The accessors of a moved-from communicator have nothing to return: they
// stop the program with the mistake (as value() on an error does).
#define KEEL_COMM_ALIVE(op) \
    if (!impl_) comm::stop_moved_from(op)

int Communicator::rank() const noexcept {
    KEEL_COMM_ALIVE("rank");
    return impl_->rank;
}
int Communicator::size() const noexcept {
    KEEL_COMM_ALIVE("size");
    return impl_->size;
}
const Device& Communicator::device() const noexcept {
    KEEL_COMM_ALIVE("device");
    return impl_->device;
}
const std::string& Communicator::store_prefix() const noexcept {
    KEEL_COMM_ALIVE("store_prefix");
    return impl_->name;
}
const std::string& Communicator::name() const noexcept { return store_prefix(); }
CommEngine Communicator::engine_kind() const noexcept {
    KEEL_COMM_ALIVE("engine_kind");
    return impl_->engine_kind;
}
bool Communicator::uses_native_engine() const noexcept {
    KEEL_COMM_ALIVE("uses_native_engine");
    return impl_->native != nullptr;
}
const std::string& Communicator::engine_description() const noexcept {
    KEEL_COMM_ALIVE("engine_description");
    return impl_->engine;
}
const std::string& Communicator::engine() const noexcept { return engine_description(); }
void Communicator::abort() const noexcept {
    if (!impl_) return;  // no group: nothing to abort
    if (impl_->native) return impl_->native->abort();
    impl_->abort();
}
Result<void> Communicator::error() const {
    if (!impl_) return comm::moved_from("error");
    return impl_->native ? impl_->native->error() : impl_->error();
}

std::chrono::milliseconds Communicator::timeout() const noexcept {
    KEEL_COMM_ALIVE("timeout");
    return impl_->timeout();
}
#undef KEEL_COMM_ALIVE

Result<void> Communicator::set_timeout(std::chrono::milliseconds timeout) {
    if (!impl_) return comm::moved_from("set_timeout");
    if (timeout.count() <= 0)
        return Error(KEEL_STATUS_INVALID_ARGUMENT, impl_->where("set_timeout") + ": the timeout must be positive, not " +
                                                       std::to_string(timeout.count()) + " ms");
    if (impl_->native)
        return Error(KEEL_STATUS_UNIMPLEMENTED,
                     impl_->where("set_timeout") + ": the plugin's engine (" + impl_->engine +
                         ") took its timeout at create (keel.h 1.4); set CommOptions::timeout instead");
    impl_->set_timeout(timeout);
    return {};
}

namespace {

// Impl::checked: keel's checks (KEEL_CHECK), or the CPU plugin's checker
// (KEEL_CPU_CHECK: any value but off, "abort" included).
Result<bool> checks_on() {
    KEEL_TRY_ASSIGN(const std::optional<bool> check, env::flag(env::Var::check));
    if (check.value_or(false)) return true;
    const std::optional<std::string_view> cpu = env::text(env::Var::cpu_check);
    return cpu.has_value() && env::parse_switch(*cpu) != std::optional<bool>(false);
}

}  // namespace

Result<Communicator> Communicator::create(const Device& device, const Store& store, int rank, int size,
                                          const CommOptions& options) {
    static std::atomic<int> created{0};
    // Meeting the peers writes to sockets (a Redis store, the native
    // engine's exchange, Gloo): no SIGPIPE from any of them.
    const comm::SigpipeBlocked blocked;
    if (size < 1 || rank < 0 || rank >= size)
        return Error(KEEL_STATUS_INVALID_ARGUMENT, "[Communicator::create] rank " + std::to_string(rank) +
                                                       " of size " + std::to_string(size) +
                                                       ": expected 0 <= rank < size");
    if (options.timeout.count() <= 0)
        return Error(KEEL_STATUS_INVALID_ARGUMENT, "[Communicator::create] the timeout must be positive");
    const std::string name =
        options.key_prefix.empty() ? "keel/comm/" + std::to_string(created.fetch_add(1)) : options.key_prefix;
    comm::EngineChoice engine;
    KEEL_TRY_ASSIGN(std::unique_ptr<comm::NativeComm> native,
                    comm::NativeComm::choose(device, store, rank, size, name, options, engine));
    if (native) {
        auto impl = std::make_shared<Impl>(device, rank, size, name, options.timeout, options.check_sizes, false);
        impl->native = std::move(native);
        impl->engine_kind = engine.kind;
        impl->engine = std::move(engine.description);
        return Communicator(std::move(impl));
    }
    KEEL_TRY_ASSIGN(const bool checked, checks_on());
    KEEL_TRY_ASSIGN(comm::Connected connected, comm::connect(store, name, rank, size, options));
    auto impl = std::make_shared<Impl>(device, rank, size, name, options.timeout, options.check_sizes, checked);
    impl->engine_kind = engine.kind;
    impl->engine = std::move(engine.description) + (impl->host_addressable ? "; Gloo works on device memory in place (host-addressable)"
                                                               : "; staged through pinned host memory");
    impl->mesh = std::make_unique<comm::GlooMesh>(std::move(connected.context), std::move(connected.sockets));
    impl->claim_store = store;
    impl->notice = std::make_unique<comm::FailureNotice>(store, name, rank, size);
    impl->held_keys = std::move(connected.held_keys);
    impl->plugin_keys = std::move(engine.plugin_keys);
    impl->start_watching();
    impl->add_to_diagnoses();
    return Communicator(std::move(impl));
}

Result<Communicator> Communicator::create_from_env(const Device& device, const CommOptions& options) {
    KEEL_TRY_ASSIGN(RankInfo info, rank_from_env());
    KEEL_TRY_ASSIGN(Store store, comm::store_from_env(options.timeout));
    return create(device, store, info.rank, info.size, options);
}

// ---- collectives --------------------------------------------------------

Result<void> Communicator::all_reduce(const Stream& stream, DeviceView in, DeviceView out, keel_dtype dtype,
                                      ReduceOp reduce) const {
    if (!impl_) return comm::moved_from("all_reduce");
    Impl& impl = *impl_;
    constexpr const char* kOp = "all_reduce";
    KEEL_TRY(check_stream(impl, kOp, stream));
    KEEL_TRY(check_view(impl, kOp, "in", in));
    KEEL_TRY(check_view(impl, kOp, "out", out));
    KEEL_TRY(check_same_size(impl, kOp, in, out));
    KEEL_TRY(check_dtype(impl, kOp, dtype, reduce, in.size()));
    const std::uint64_t n = in.size();
    if (n == 0) return {};
    const TraceRange traced(stream, "comm", kOp, {n, impl.rank, -1});
    if (impl.native) return impl.native->all_reduce(stream, in, out, dtype, reduce);
    auto op = std::make_shared<Op>(OpKind::all_reduce);
    const std::unique_lock order = impl.order();
    op->bytes = n;
    op->dtype = dtype;
    op->reduce = reduce;
    if (impl.host_addressable) return enqueue_in_place(impl, order, stream, std::move(op), in, out);
    return enqueue_staged(impl, order, stream, std::move(op), in, out, {});
}

Result<void> Communicator::all_reduce(const Stream& stream, DeviceView inout, keel_dtype dtype,
                                      ReduceOp reduce) const {
    return all_reduce(stream, inout, inout, dtype, reduce);
}

Result<void> Communicator::broadcast(const Stream& stream, DeviceView in, DeviceView out, int root) const {
    if (!impl_) return comm::moved_from("broadcast");
    Impl& impl = *impl_;
    constexpr const char* kOp = "broadcast";
    KEEL_TRY(check_stream(impl, kOp, stream));
    KEEL_TRY(check_root(impl, kOp, root));
    KEEL_TRY(check_view(impl, kOp, "out", out));
    const bool is_root = impl.rank == root;
    if (is_root) {
        KEEL_TRY(check_view(impl, kOp, "in", in));
        KEEL_TRY(check_same_size(impl, kOp, in, out));
    }
    const std::uint64_t n = out.size();
    if (n == 0) return {};
    const TraceRange traced(stream, "comm", kOp, {n, impl.rank, root});
    if (impl.native) return impl.native->broadcast(stream, is_root ? in : out, out, root);
    auto op = std::make_shared<Op>(OpKind::broadcast);
    const std::unique_lock order = impl.order();
    op->bytes = n;
    op->root = root;
    if (impl.host_addressable) return enqueue_in_place(impl, order, stream, std::move(op), is_root ? in : out, out);
    // The root's in is its result: copied out only when out is elsewhere.
    const bool in_place = is_root && in.address() == out.address();
    return enqueue_staged(impl, order, stream, std::move(op), is_root ? in : out, out,
                          {.one_block = true, .copy_in = is_root, .copy_out = !in_place});
}

Result<void> Communicator::broadcast(const Stream& stream, DeviceView inout, int root) const {
    return broadcast(stream, inout, inout, root);
}

Result<void> Communicator::all_gather(const Stream& stream, DeviceView in, DeviceView out) const {
    if (!impl_) return comm::moved_from("all_gather");
    Impl& impl = *impl_;
    constexpr const char* kOp = "all_gather";
    KEEL_TRY(check_stream(impl, kOp, stream));
    KEEL_TRY(check_view(impl, kOp, "in", in));
    KEEL_TRY(check_view(impl, kOp, "out", out));
    KEEL_TRY(check_parts(impl, kOp, "out", out, "in", in));
    const std::uint64_t n = in.size();
    if (n == 0) return {};
    const TraceRange traced(stream, "comm", kOp, {n, impl.rank, -1});
    if (impl.native) return impl.native->all_gather(stream, in, out);
    auto op = std::make_shared<Op>(OpKind::all_gather);
    const std::unique_lock order = impl.order();
    op->bytes = n;
    if (impl.host_addressable) return enqueue_in_place(impl, order, stream, std::move(op), in, out);
    return enqueue_staged(impl, order, stream, std::move(op), in, out, {.one_block = false});
}

Result<void> Communicator::reduce_scatter(const Stream& stream, DeviceView in, DeviceView out, keel_dtype dtype,
                                          ReduceOp reduce) const {
    if (!impl_) return comm::moved_from("reduce_scatter");
    Impl& impl = *impl_;
    constexpr const char* kOp = "reduce_scatter";
    KEEL_TRY(check_stream(impl, kOp, stream));
    KEEL_TRY(check_view(impl, kOp, "in", in));
    KEEL_TRY(check_view(impl, kOp, "out", out));
    KEEL_TRY(check_parts(impl, kOp, "in", in, "out", out));
    const std::uint64_t k = out.size();
    KEEL_TRY(check_dtype(impl, kOp, dtype, reduce, k));
    if (k == 0) return {};
    const TraceRange traced(stream, "comm", kOp, {k, impl.rank, -1});
    if (impl.native) return impl.native->reduce_scatter(stream, in, out, dtype, reduce);
    auto op = std::make_shared<Op>(OpKind::reduce_scatter);
    const std::unique_lock order = impl.order();
    op->bytes = k;
    op->dtype = dtype;
    op->reduce = reduce;
    op->staging.reserve(3);
    KEEL_TRY_ASSIGN(PinnedBuffer* scratch, impl.stage(stream, *op, in.size()));
    op->scratch = bytes_of(scratch);
    if (impl.host_addressable) return enqueue_in_place(impl, order, stream, std::move(op), in, out);
    return enqueue_staged(impl, order, stream, std::move(op), in, out, {.one_block = false});
}

Result<void> Communicator::barrier(const Stream& stream) const {
    if (!impl_) return comm::moved_from("barrier");
    Impl& impl = *impl_;
    constexpr const char* kOp = "barrier";
    KEEL_TRY(check_stream(impl, kOp, stream));
    const TraceRange traced(stream, "comm", kOp, {0, impl.rank, -1});
    if (impl.native) {
        // The native entries have no barrier: a 4-byte all_reduce is one.
        KEEL_TRY_ASSIGN(Buffer token, Buffer::allocate(stream, 4));
        KEEL_TRY(stream.memset(token, 0));
        KEEL_TRY(impl.native->all_reduce(stream, token.view(), token.view(), KEEL_DTYPE_I32, ReduceOp::sum));
        return stream.hold(std::move(token));
    }
    auto op = std::make_shared<Op>(OpKind::barrier);
    const std::unique_lock order = impl.order();
    return impl.enqueue(order, stream, std::move(op), {}, {});
}

Result<void> Communicator::reduce(const Stream& stream, DeviceView in, DeviceView out, keel_dtype dtype,
                                  ReduceOp reduce, int root) const {
    if (!impl_) return comm::moved_from("reduce");
    Impl& impl = *impl_;
    constexpr const char* kOp = "reduce";
    KEEL_TRY(check_stream(impl, kOp, stream));
    KEEL_TRY(check_root(impl, kOp, root));
    KEEL_TRY(check_view(impl, kOp, "in", in));
    const bool is_root = impl.rank == root;
    if (is_root) {
        KEEL_TRY(check_view(impl, kOp, "out", out));
        KEEL_TRY(check_same_size(impl, kOp, in, out));
    }
    KEEL_TRY(check_dtype(impl, kOp, dtype, reduce, in.size()));
    const std::uint64_t n = in.size();
    if (n == 0) return {};
    const TraceRange traced(stream, "comm", kOp, {n, impl.rank, root});
    if (impl.native) {
        // An all_reduce; off the root into scratch the stream frees after it.
        if (is_root) return impl.native->all_reduce(stream, in, out, dtype, reduce);
        KEEL_TRY_ASSIGN(Buffer scratch, Buffer::allocate(stream, n));
        KEEL_TRY(impl.native->all_reduce(stream, in, scratch.view(), dtype, reduce));
        return stream.hold(std::move(scratch));
    }
    auto op = std::make_shared<Op>(OpKind::reduce);
    const std::unique_lock order = impl.order();
    op->bytes = n;
    op->dtype = dtype;
    op->reduce = reduce;
    op->root = root;
    if (impl.host_addressable && is_root) return enqueue_in_place(impl, order, stream, std::move(op), in, out);
    if (impl.host_addressable) {  // off the root: the result lands in a staging block and stays there
        op->staging.reserve(1);
        KEEL_TRY_ASSIGN(PinnedBuffer* result, impl.stage(stream, *op, n));
        op->in = host_address(in);
        op->out = bytes_of(result);
        return impl.enqueue(order, stream, std::move(op), {}, {});
    }
    // Off the root, `in` stands in for the out it does not have: the result
    // stays in the staging.
    return enqueue_staged(impl, order, stream, std::move(op), in, is_root ? out : in,
                          {.one_block = true, .copy_in = true, .copy_out = is_root});
}

// ---- point to point -----------------------------------------------------

Result<void> Communicator::send_recv(const Stream& stream, std::span<const P2P> ops) const {
    if (!impl_) return comm::moved_from("send_recv");
    return comm::send_recv_as(*impl_, stream, ops, {});
}

Result<void> comm::send_recv_as(Communicator::Impl& impl, const Stream& stream, std::span<const P2P> ops,
                                const Signature& group) {
    constexpr const char* kOp = "send_recv";
    KEEL_TRY(check_stream(impl, kOp, stream));
    for (const P2P& p : ops) {
        const bool send = p.kind == P2P::Kind::send;
        if (p.peer < 0 || p.peer >= impl.size || p.peer == impl.rank)
            return Error(KEEL_STATUS_INVALID_ARGUMENT, impl.where(kOp) + ": peer " + std::to_string(p.peer) +
                                                           " is not another rank of 0.." +
                                                           std::to_string(impl.size - 1));
        KEEL_TRY(check_view(impl, kOp, send ? "a send's view" : "a recv's view", p.view));
    }
    // A single transfer names its peer and direction; a batch, its bytes.
    std::uint64_t total = 0;
    for (const P2P& p : ops) total += p.view.size();
    const bool single = ops.size() == 1;
    const char* name = !single ? "send_recv" : ops[0].kind == P2P::Kind::send ? "send" : "recv";
    const TraceRange traced(stream, "comm", name, {total, impl.rank, single ? ops[0].peer : -1});
    if (impl.native) return impl.native->send_recv(stream, ops);
    auto op = std::make_shared<Op>(OpKind::send_recv);
    op->group = group;
    const std::unique_lock order = impl.order();
    op->transfers.reserve(ops.size());
    std::vector<StagedCopy> sends, recvs;
    if (!impl.host_addressable) op->staging.reserve(ops.size());
    for (const P2P& p : ops) {
        // Checked, an empty message still meets its peer's: its size is compared.
        if (p.view.size() == 0 && !impl.check_sizes) continue;
        const bool send = p.kind == P2P::Kind::send;
        std::byte* data = nullptr;
        if (p.view.size() > 0 && impl.host_addressable) {
            data = host_address(p.view);
        } else if (p.view.size() > 0) {
            KEEL_TRY_ASSIGN(PinnedBuffer* staged, impl.stage(stream, *op, p.view.size()));
            data = bytes_of(staged);
            (send ? sends : recvs).push_back({staged, p.view});
        }
        op->transfers.push_back({send, p.peer, 0, data, p.view.size()});
    }
    if (op->transfers.empty()) return {};
    return impl.enqueue(order, stream, std::move(op), sends, recvs);
}

Result<void> Communicator::send(const Stream& stream, DeviceView view, int peer) const {
    if (!impl_) return comm::moved_from("send");
    const P2P one = P2P::send(view, peer);
    return send_recv(stream, std::span(&one, 1));
}

Result<void> Communicator::recv(const Stream& stream, DeviceView view, int peer) const {
    if (!impl_) return comm::moved_from("recv");
    const P2P one = P2P::recv(view, peer);
    return send_recv(stream, std::span(&one, 1));
}

Result<void> Communicator::send(const Stream& stream, Buffer&& buffer, int peer) const {
    if (!impl_) return comm::moved_from("send");
    Buffer held = std::move(buffer);
    KEEL_TRY(send(stream, held.view(), peer));
    // After the send on the same stream: the stream passes this point only
    // once the send ran, so the buffer goes no earlier.
    return stream.hold(std::move(held));
}

Result<void> Communicator::send_recv(const Stream& stream, std::span<const P2P> ops, std::vector<Buffer>&& keep) const {
    if (!impl_) return comm::moved_from("send_recv");
    std::vector<Buffer> held = std::move(keep);
    KEEL_TRY(send_recv(stream, ops));
    if (held.empty()) return {};
    return stream.hold(std::move(held));
}

}  // namespace keel
