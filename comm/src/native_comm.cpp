#include "native_comm.hpp"

#include "c_store.hpp"

#include <keel/base/dtype.hpp>
#include <keel/c_error.hpp>
#include <keel/environment.hpp>
#include <keel/plugin/comm_entries.hpp>
#include <keel/plugin_table.hpp>

#include <algorithm>
#include <vector>

namespace keel::comm {
namespace {

static_assert(static_cast<int>(ReduceOp::sum) == KEEL_REDUCE_SUM && static_cast<int>(ReduceOp::prod) == KEEL_REDUCE_PROD &&
              static_cast<int>(ReduceOp::max) == KEEL_REDUCE_MAX && static_cast<int>(ReduceOp::min) == KEEL_REDUCE_MIN &&
              static_cast<int>(ReduceOp::avg) == KEEL_REDUCE_AVG);

keel_reduce_op c_op(ReduceOp op) noexcept { return static_cast<keel_reduce_op>(op); }

Result<bool> generic_forced(const CommOptions& options) {
    KEEL_TRY_ASSIGN(const std::optional<bool> forced, env::flag(env::Var::comm_generic));
    return forced.value_or(!options.native);
}

}  // namespace

bool NativeComm::offered(const Device& device) noexcept { return plugin::has_comm_set(plugin_table(device)); }

Result<std::unique_ptr<NativeComm>> NativeComm::choose(const Device& device, const Store& store, int rank,
                                                       int size, const std::string& name,
                                                       const CommOptions& options, EngineChoice& engine) {
    KEEL_TRY_ASSIGN(const bool generic, generic_forced(options));
    if (generic) {
        engine = {CommEngine::generic_forced, "generic (Gloo): forced by CommOptions::native = false or KEEL_COMM_GENERIC", {}};
        return std::unique_ptr<NativeComm>();
    }
    if (!offered(device)) {
        engine = {CommEngine::generic_no_entries,
                  "generic (Gloo): " + device.type() + "'s plugin has no communication entries (keel.h 1.4)", {}};
        return std::unique_ptr<NativeComm>();
    }
    // Every key the plugin sets is recorded: the communicator erases them
    // when it goes (on either path), or at once when create fails.
    auto plugin_keys = std::make_shared<WrittenKeys>(store);
    const CStore c_store(plugin_keys->store());
    // The plugin's keys live apart from the generic path's (which may follow
    // under the same name when the plugin declines).
    const std::string prefix = name + "/native";
    keel_comm_config config{};
    config.struct_size = KEEL_COMM_CONFIG_STRUCT_SIZE;
    config.rank = rank;
    config.size = size;
    config.timeout_ms = static_cast<std::uint64_t>(options.timeout.count());
    config.key_prefix = prefix.c_str();
    config.store = c_store.table();
    // No rank posts a failure before every rank met in comm_create.
    FailureNotice::clear_stale(store, name, size);
    keel_comm comm = nullptr;
    Result<void> created = take_c_error(plugin_table(device).comm_create(plugin_handle(device), &config, &comm));
    if (!created.ok()) {
        // Declined on every rank alike (keel.h): the generic path serves the group.
        if (created.error().code() == KEEL_STATUS_UNIMPLEMENTED) {
            engine = {CommEngine::generic_declined, "generic (Gloo): the plugin declined: " + created.error().message(),
                      std::move(plugin_keys)};
            return std::unique_ptr<NativeComm>();
        }
        return created.error();
    }
    engine = {CommEngine::native, "native (" + device.type() + " plugin)", {}};
    std::string where = "comm '" + name + "' rank " + std::to_string(rank) + "/" + std::to_string(size);
    return std::unique_ptr<NativeComm>(new NativeComm(device, comm, std::move(where), options.timeout,
                                                      std::move(plugin_keys),
                                                      std::make_unique<FailureNotice>(store, name, rank, size), size));
}

NativeComm::NativeComm(Device device, keel_comm comm, std::string where, std::chrono::milliseconds timeout,
                       std::shared_ptr<WrittenKeys> plugin_keys, std::unique_ptr<FailureNotice> notice, int size)
    : device_(std::move(device)),
      api_(plugin_table(device_)),
      comm_(comm),
      where_(std::move(where)),
      timeout_(timeout),
      plugin_keys_(std::move(plugin_keys)),
      notice_(std::move(notice)) {
    if (size > 1) watcher_ = std::thread([this] { watch_peers(); });
}

NativeComm::~NativeComm() {
    if (watcher_.joinable()) {
        {
            std::lock_guard lock(watch_mutex_);
            stopping_ = true;
        }
        watch_cv_.notify_all();
        watcher_.join();
    }
    (void)take_c_error(api_.comm_destroy(comm_));
}

bool NativeComm::Failure::note(Error e) {
    std::lock_guard lock(mutex);
    if (error) return false;
    error = std::move(e);
    return true;
}

void NativeComm::fail(Error e) const noexcept {
    try {
        const std::string message = e.message();
        if (failure_->note(std::move(e))) notice_->post(message, std::min(timeout_, kNoticeBound));
    } catch (...) {
        // Out of memory for the message: the plugin still fails the
        // communicator, and its enqueues report the failure.
    }
}

void NativeComm::watch_peers() {
    // A slice of the timeout, so a peer's failure ends this rank's wait in
    // a fraction of it, without asking the store more than a few times a
    // second.
    const auto slice = std::clamp<std::chrono::milliseconds>(timeout_ / 16, std::chrono::milliseconds(20),
                                                              std::chrono::milliseconds(500));
    std::unique_lock lock(watch_mutex_);
    for (;;) {
        if (watch_cv_.wait_for(lock, slice, [&] { return stopping_; })) return;
        lock.unlock();
        if (!error().ok()) return;  // failed here: this rank posted, or aborted
        if (std::optional<PeerFailure> peer = notice_->read(std::min(timeout_, kNoticeBound))) {
            (void)failure_->note(Error(KEEL_STATUS_UNAVAILABLE,
                                       "[Communicator] " + where_ + ": ended because " + FailureNotice::text(*peer)));
            (void)take_c_error(api_.comm_abort(comm_));
            return;
        }
        lock.lock();
    }
}

namespace {
// Bad input refused at the call (nothing enqueued, keel.h's errors at the
// call) leaves the communicator as it was; any other error means it failed
// (aborted, failed earlier, a peer that never connected: UNAVAILABLE) or
// that the stream had (the peers then wait for this rank's part).
bool fails_communicator(Status code) {
    return code != KEEL_STATUS_INVALID_ARGUMENT && code != KEEL_STATUS_UNIMPLEMENTED && code != KEEL_STATUS_OUT_OF_RANGE;
}
}  // namespace

Result<void> NativeComm::checked(const Stream& stream, keel_error* error) const {
    Result<void> r = take_c_error(error);
    if (!r.ok()) {
        if (fails_communicator(r.error().code())) fail(r.error());
        return r;
    }
    // The plugin fails the stream of an operation that fails while running
    // (its timeout, a dead peer, an asynchronous engine error) and of every
    // one not yet complete, at the operation's point: this host function,
    // right after it, sees that failure as its status, so error() reports
    // it once the stream passed the operation, as on the generic path,
    // without waiting for a later enqueue to be refused.
    Result<void> watched = stream.enqueue_host_func([failure = failure_, where = where_](Status status) {
        if (status == KEEL_STATUS_OK) return;
        failure->note(Error(status, "[Communicator] " + where + ": an operation's stream failed at or before it (" +
                                        status_name(status) + "; the stream's error says what failed)"));
    });
    // Refused: the stream is known to have failed since the operation went in.
    if (!watched.ok() && fails_communicator(watched.error().code())) fail(watched.error());
    return r;
}

Result<void> NativeComm::stream_settled(const Stream& stream, const char* what) const {
    Result<std::optional<PendingHostFuncs>> settled = settle_fallible_host_funcs(stream, timeout_);
    if (settled.ok() && !*settled) return {};
    std::optional<Error> cause;
    if (!settled.ok()) {
        cause = Error(settled.error().code(), "[Communicator] " + where_ + ": " + what +
                                                  " not enqueued: its stream failed before it (" +
                                                  settled.error().message() +
                                                  "), so its input is not what the program meant to send; the "
                                                  "communicator is failed on every rank");
    } else {
        // Its input is not known to be good, and the peers wait for it: the
        // operation cannot go, nor can the communicator's later ones.
        const PendingHostFuncs& still = **settled;
        cause = Error(KEEL_STATUS_UNAVAILABLE,
                      "[Communicator] " + where_ + ": " + what + " not enqueued: " + std::to_string(still.host_funcs) +
                          " host function(s) that can fail its stream (on " + std::to_string(still.streams) +
                          " stream(s): its own and those it waits for) were still pending after " +
                          std::to_string(timeout_.count()) +
                          " ms (the communicator's timeout; is the stream blocked?), so its input may never "
                          "arrive; the communicator is failed on every rank");
    }
    // Posted for the peers, whose matching operations an engine ends only
    // at their timeout otherwise (their watchers abort them naming it).
    fail(*cause);
    // The peers' matching operations then fail as after abort(), instead of
    // reducing with data this rank never meant.
    (void)take_c_error(api_.comm_abort(comm_));
    return *cause;
}

Result<void> NativeComm::all_reduce(const Stream& stream, DeviceView in, DeviceView out, keel_dtype dtype,
                                    ReduceOp op) const {
    KEEL_TRY(stream_settled(stream, "all_reduce"));
    const std::uint64_t count = in.size() / dtype_size(dtype);
    return checked(stream, api_.comm_all_reduce(comm_, plugin_handle(stream), in.address(), out.address(), count, dtype, c_op(op)));
}

Result<void> NativeComm::broadcast(const Stream& stream, DeviceView in, DeviceView out, int root) const {
    KEEL_TRY(stream_settled(stream, "broadcast"));
    return checked(stream, api_.comm_broadcast(comm_, plugin_handle(stream), in.address(), out.address(), out.size(), root));
}

Result<void> NativeComm::all_gather(const Stream& stream, DeviceView in, DeviceView out) const {
    KEEL_TRY(stream_settled(stream, "all_gather"));
    return checked(stream, api_.comm_all_gather(comm_, plugin_handle(stream), in.address(), out.address(), in.size()));
}

Result<void> NativeComm::reduce_scatter(const Stream& stream, DeviceView in, DeviceView out, keel_dtype dtype,
                                        ReduceOp op) const {
    KEEL_TRY(stream_settled(stream, "reduce_scatter"));
    const std::uint64_t count = out.size() / dtype_size(dtype);
    return checked(
        stream, api_.comm_reduce_scatter(comm_, plugin_handle(stream), in.address(), out.address(), count, dtype, c_op(op)));
}

Result<void> NativeComm::send_recv(const Stream& stream, std::span<const P2P> ops) const {
    std::vector<keel_p2p_op> c_ops;
    c_ops.reserve(ops.size());
    for (const P2P& p : ops) {
        if (p.view.size() == 0) continue;
        keel_p2p_op c{};
        c.struct_size = KEEL_P2P_OP_STRUCT_SIZE;
        c.kind = p.kind == P2P::Kind::send ? KEEL_P2P_SEND : KEEL_P2P_RECV;
        c.peer = p.peer;
        c.addr = p.view.address();
        c.size = p.view.size();
        c_ops.push_back(c);
    }
    if (c_ops.empty()) return {};
    KEEL_TRY(stream_settled(stream, "send_recv"));
    const auto count = static_cast<std::uint32_t>(c_ops.size());
    // 1.5: the element size travels with the batch, so keel_p2p_op can
    // grow; a 1.4 plugin gets the entry it knows.
    if (api_.abi_minor >= 5)
        return checked(stream, api_.comm_send_recv_sized(comm_, plugin_handle(stream), c_ops.data(), count, sizeof(keel_p2p_op)));
    return checked(stream, api_.comm_send_recv(comm_, plugin_handle(stream), c_ops.data(), count));
}

void NativeComm::abort() const noexcept {
    try {
        fail(Error(KEEL_STATUS_FAILED_PRECONDITION, "[Communicator::abort] " + where_ + ": aborted"));
    } catch (...) {
        // Out of memory for the message: the plugin still aborts, and its
        // enqueues report the failure.
    }
    (void)take_c_error(api_.comm_abort(comm_));
}

Result<void> NativeComm::error() const {
    std::lock_guard lock(failure_->mutex);
    if (failure_->error) return *failure_->error;
    return {};
}

}  // namespace keel::comm
