// Communication entries (keel.h 1.4) of the fake plugin's comm variant, so
// the runtime's dispatch to native entries and keel-cts's checks of the set
// run without a GPU:
// - a group of one rank needs no engine (every operation copies its input
//   to its output on the stream);
// - a group of two ranks in ONE process (two threads, one fake device each)
//   meets in the process by its key prefix and runs all_reduce (the other
//   operations are UNIMPLEMENTED there). An operation blocks its stream's
//   worker until the other rank's matching one arrived, its own
//   communicator is aborted, or its timeout passed since the stream
//   reached it, as NCCL's kernels and watchdog do: an abort on one rank
//   does not reach the other, which fails only at its own timeout;
// - a larger group is declined with UNIMPLEMENTED on every rank alike, as
//   keel.h asks, and the runtime falls back to its generic path.
// A key prefix naming "times-out" fails the first operation as an engine's
// timeout does. These variants also have stream_enqueue_fallible_host_func
// (fake_plugin.cpp). Included by fake_plugin.cpp at global scope
// (keel_comm_t is keel.h's); uses its device, stream and worker types and its
// helpers.
#pragma once

namespace fake_comm {

// Where the two ranks of a group meet, and their operations in flight.
struct Pair {
    struct Arrival {
        keel_device_addr in = 0;
        keel_device_addr out = 0;
        std::uint64_t count = 0;
        keel_dtype dtype = KEEL_DTYPE_F32;
        keel_reduce_op op = KEEL_REDUCE_SUM;
    };
    std::mutex mutex;
    std::condition_variable cv;  // a rank joined, an operation arrived or completed, an abort
    int joined = 0;
    std::map<std::uint64_t, Arrival> arrived[2];  // by operation number, until the peer's came
    std::set<std::uint64_t> completed;            // written by the second to arrive, until the first saw it
    // Operations whose two sides differ (count, dtype, reduction): the
    // second to arrive says how, for the first; nothing was reduced.
    std::map<std::uint64_t, std::string> mismatched;
};

}  // namespace fake_comm

struct keel_comm_t {
    keel_device_t* device = nullptr;
    std::string where;  // "comm '<prefix>' rank r/n"
    int rank = 0;
    int size = 1;
    std::chrono::milliseconds timeout{0};
    // Shared with the operations in flight (they may outlive the handle).
    std::shared_ptr<std::atomic<bool>> aborted = std::make_shared<std::atomic<bool>>(false);
    std::shared_ptr<fake_comm::Pair> pair;  // two-rank groups
    std::uint64_t next_op = 0;              // the next operation's number (enqueues are ordered)
    // A key prefix naming "times-out": the first operation fails as an
    // engine's timeout does (UNAVAILABLE, the communicator failed), so the
    // runtime's handling of a native failure runs without a GPU.
    bool times_out = false;
};

namespace fake_comm {

Result<void> require_comm(keel_comm c, keel_stream s, const char* op) {
    if (c == nullptr) return Error(KEEL_STATUS_INVALID_ARGUMENT, std::string(op) + ": comm is null");
    if (c->aborted->load())
        return Error(KEEL_STATUS_FAILED_PRECONDITION, std::string(op) + " on " + c->where + ": aborted");
    if (c->times_out) {
        c->aborted->store(true);
        return Error(KEEL_STATUS_UNAVAILABLE, std::string(op) + " on " + c->where +
                                                  ": did not complete within the timeout (the fake engine's injected timeout)");
    }
    KEEL_TRY(require_stream(s));
    if (s->device != c->device)
        return Error(KEEL_STATUS_INVALID_ARGUMENT, std::string(op) + " on " + c->where + ": the stream is on " +
                                                       s->device->name + ", the communicator on " + c->device->name);
    return ok();
}

Result<std::uint64_t> reduction_bytes(keel_dtype dtype, keel_reduce_op op, std::uint64_t count, const char* name) {
    auto es = keel::plugin::reduction_element_size(dtype, op);
    if (!es.ok()) return Error(es.error().code(), std::string(name) + ": " + es.error().message());
    return count * *es;
}

// out = in, in stream order (nothing to do in place).
Result<void> copy(keel_stream s, keel_device_addr in, keel_device_addr out, std::uint64_t bytes) {
    KEEL_TRY(s->device->check_range(in, bytes, "in"));
    KEEL_TRY(s->device->check_range(out, bytes, "out"));
    if (bytes == 0 || in == out) return ok();
    s->worker->push([in, out, bytes] {
        std::memmove(reinterpret_cast<void*>(out), reinterpret_cast<const void*>(in), bytes);
    });
    return ok();
}

// The groups of two meeting now, by key prefix (ranks in this process).
std::mutex g_pairs_mutex;
std::map<std::string, std::shared_ptr<Pair>> g_pairs;

// Joins the other rank of a two-rank group under `prefix`, waiting at most
// `timeout` for it.
Result<std::shared_ptr<Pair>> meet(const std::string& prefix, std::chrono::milliseconds timeout,
                                   const std::string& where) {
    std::shared_ptr<Pair> pair;
    {
        std::lock_guard lock(g_pairs_mutex);
        std::shared_ptr<Pair>& slot = g_pairs[prefix];
        if (!slot) slot = std::make_shared<Pair>();
        pair = slot;
    }
    std::unique_lock lock(pair->mutex);
    ++pair->joined;
    pair->cv.notify_all();
    const bool met = pair->cv.wait_for(lock, timeout, [&] { return pair->joined >= 2; });
    lock.unlock();
    std::lock_guard registry(g_pairs_mutex);
    if (auto it = g_pairs.find(prefix); it != g_pairs.end() && it->second == pair) g_pairs.erase(it);
    if (!met)
        return Error(KEEL_STATUS_UNAVAILABLE, where + ": the other rank did not join within " +
                                                  std::to_string(timeout.count()) +
                                                  " ms (the fake engine's groups of two meet in one process)");
    return pair;
}

keel_error* comm_create(keel_device d, const keel_comm_config* c_config, keel_comm* out) {
    return entry(fake_build.type, "comm_create", [&]() -> Result<void> {
        KEEL_TRY(keel::plugin::require_non_null(d, "device"));
        KEEL_TRY(keel::plugin::require_non_null(out, "out_comm"));
        KEEL_TRY_ASSIGN(const keel::plugin::CommConfig config, keel::plugin::read_comm_config(c_config));
        // Decided from the config alone, so every rank answers the same.
        if (config.size > 2)
            return Error(KEEL_STATUS_UNIMPLEMENTED, "the fake engine runs groups of one or two ranks only, not " +
                                                        std::to_string(config.size) + " ranks");
        // Through the store and back, as a real engine meets its peers; a
        // key set twice (two communicators under one prefix) fails here.
        const std::string rank_key = "rank/" + std::to_string(config.rank);
        const std::string claim = "fake comm of " + d->name;
        KEEL_TRY(config.set(rank_key, claim));
        KEEL_TRY_ASSIGN(const std::string back, config.get(rank_key));
        if (back != claim)
            return Error(KEEL_STATUS_FAILED_PRECONDITION, config.where() + ": its key holds another rank's claim");
        auto comm = std::make_unique<keel_comm_t>();
        comm->device = d;
        comm->where = config.where();
        comm->rank = config.rank;
        comm->size = config.size;
        comm->timeout = std::chrono::milliseconds(config.timeout_ms);
        comm->times_out = comm->where.find("times-out") != std::string::npos;
        if (config.size == 2) {
            KEEL_TRY_ASSIGN(comm->pair, meet(config.key_prefix, comm->timeout, comm->where));
        }
        *out = comm.release();
        return ok();
    });
}

keel_error* comm_destroy(keel_comm c) {
    return entry(fake_build.type, "comm_destroy", [&]() -> Result<void> {
        KEEL_TRY(keel::plugin::require_non_null(c, "comm"));
        delete c;  // its operations hold nothing of it
        return ok();
    });
}

keel_error* comm_abort(keel_comm c) {
    return entry(fake_build.type, "comm_abort", [&]() -> Result<void> {
        KEEL_TRY(keel::plugin::require_non_null(c, "comm"));
        c->aborted->store(true);
        if (c->pair) {
            std::lock_guard lock(c->pair->mutex);  // a waiting operation sees the flag
            c->pair->cv.notify_all();
        }
        return ok();
    });
}

// out[i] = a[i] op b[i] for both ranks' arrivals (outputs may alias inputs).
template <class T>
void reduce_pair(const Pair::Arrival& a, const Pair::Arrival& b) {
    const T* x = reinterpret_cast<const T*>(a.in);
    const T* y = reinterpret_cast<const T*>(b.in);
    std::vector<T> r(a.count);
    for (std::uint64_t i = 0; i < a.count; ++i) {
        switch (a.op) {
            case KEEL_REDUCE_PROD: r[i] = static_cast<T>(x[i] * y[i]); break;
            case KEEL_REDUCE_MAX: r[i] = std::max(x[i], y[i]); break;
            case KEEL_REDUCE_MIN: r[i] = std::min(x[i], y[i]); break;
            case KEEL_REDUCE_AVG: r[i] = static_cast<T>((x[i] + y[i]) / 2); break;
            default: r[i] = static_cast<T>(x[i] + y[i]); break;
        }
    }
    std::memcpy(reinterpret_cast<void*>(a.out), r.data(), r.size() * sizeof(T));
    std::memcpy(reinterpret_cast<void*>(b.out), r.data(), r.size() * sizeof(T));
}

// "4 x f32 sum": an arrival in a mismatch message.
std::string arrival_text(const Pair::Arrival& a) {
    static constexpr const char* kOps[] = {"sum", "prod", "max", "min", "avg"};
    const auto op = static_cast<std::size_t>(a.op);
    return std::to_string(a.count) + " x " + keel::dtype_name(a.dtype) + " " + (op < 5 ? kOps[op] : "?");
}

// A two-rank all_reduce: queued on the stream, where it meets the other
// rank's (see the top of this file); fails the stream when it cannot.
Result<void> pair_all_reduce(keel_comm c, keel_stream s, Pair::Arrival mine) {
    if (mine.dtype != KEEL_DTYPE_F32 && mine.dtype != KEEL_DTYPE_I32)
        return Error(KEEL_STATUS_UNIMPLEMENTED, "all_reduce on " + c->where + ": the fake engine's groups of two "
                                                "reduce f32 and i32 only");
    const std::uint64_t number = c->next_op++;
    s->worker->push([pair = c->pair, aborted = c->aborted, failure = s->failure, rank = c->rank, where = c->where,
                     timeout = c->timeout, number, mine] {
        std::unique_lock lock(pair->mutex);
        std::map<std::uint64_t, Pair::Arrival>& theirs = pair->arrived[1 - rank];
        if (auto it = theirs.find(number); it != theirs.end()) {
            const Pair::Arrival other = it->second;  // a copy: erased below
            if (other.count != mine.count || other.dtype != mine.dtype || other.op != mine.op) {
                // An engine that compares what the ranks enqueued (NCCL does
                // not): both fail, nothing is reduced or written.
                const std::string why = "counts, dtypes or reductions differ between the ranks (nothing was reduced)";
                pair->mismatched[number] = "all_reduce on " + where + " (peer's side): rank " + std::to_string(rank) +
                                           " enqueued " + arrival_text(mine) + ", this rank " + arrival_text(other) +
                                           ": " + why;
                theirs.erase(it);
                pair->cv.notify_all();
                failure->set(Error(KEEL_STATUS_FAILED_PRECONDITION,
                                   "all_reduce on " + where + ": rank " + std::to_string(1 - rank) + " enqueued " +
                                       arrival_text(other) + ", this rank " + arrival_text(mine) + ": " + why));
                return;
            }
            // Second to arrive: both outputs, while the other rank's stream waits.
            if (mine.dtype == KEEL_DTYPE_F32) reduce_pair<float>(mine, it->second);
            else reduce_pair<std::int32_t>(mine, it->second);
            theirs.erase(it);
            pair->completed.insert(number);
            pair->cv.notify_all();
            return;
        }
        pair->arrived[rank][number] = mine;
        pair->cv.notify_all();
        const bool ended = pair->cv.wait_for(lock, timeout, [&] {
            return pair->completed.count(number) > 0 || pair->mismatched.count(number) > 0 || aborted->load();
        });
        if (pair->completed.erase(number) > 0) return;
        if (auto it = pair->mismatched.find(number); it != pair->mismatched.end()) {
            failure->set(Error(KEEL_STATUS_FAILED_PRECONDITION, it->second));
            pair->mismatched.erase(it);
            return;
        }
        pair->arrived[rank].erase(number);
        aborted->store(true);
        failure->set(ended ? Error(KEEL_STATUS_FAILED_PRECONDITION, "all_reduce on " + where + ": aborted")
                           : Error(KEEL_STATUS_DEVICE_ERROR, "all_reduce on " + where + ": rank " +
                                                                 std::to_string(1 - rank) + " did not arrive within " +
                                                                 std::to_string(timeout.count()) + " ms"));
    });
    return ok();
}

keel_error* comm_all_reduce(keel_comm c, keel_stream s, keel_device_addr in, keel_device_addr out,
                            std::uint64_t count, keel_dtype dtype, keel_reduce_op op) {
    return entry(fake_build.type, "comm_all_reduce", [&]() -> Result<void> {
        KEEL_TRY(require_comm(c, s, "all_reduce"));
        KEEL_TRY_ASSIGN(const std::uint64_t bytes, reduction_bytes(dtype, op, count, "all_reduce"));
        if (c->pair) {
            KEEL_TRY(s->device->check_range(in, bytes, "in"));
            KEEL_TRY(s->device->check_range(out, bytes, "out"));
            return pair_all_reduce(c, s, {in, out, count, dtype, op});
        }
        return copy(s, in, out, bytes);  // every reduction of one rank is its input
    });
}

// The operations a two-rank group does not run.
Result<void> one_rank_only(keel_comm c, const char* op) {
    if (!c->pair) return ok();
    return Error(KEEL_STATUS_UNIMPLEMENTED,
                 std::string(op) + " on " + c->where + ": the fake engine's groups of two run all_reduce only");
}

keel_error* comm_broadcast(keel_comm c, keel_stream s, keel_device_addr in, keel_device_addr out,
                           std::uint64_t bytes, std::int32_t root) {
    return entry(fake_build.type, "comm_broadcast", [&]() -> Result<void> {
        KEEL_TRY(require_comm(c, s, "broadcast"));
        KEEL_TRY(one_rank_only(c, "broadcast"));
        if (root != 0)
            return Error(KEEL_STATUS_INVALID_ARGUMENT, "broadcast on " + c->where + ": root " +
                                                           std::to_string(root) + " is not a rank of 0..0");
        return copy(s, in, out, bytes);
    });
}

keel_error* comm_all_gather(keel_comm c, keel_stream s, keel_device_addr in, keel_device_addr out,
                            std::uint64_t bytes_per_rank) {
    return entry(fake_build.type, "comm_all_gather", [&]() -> Result<void> {
        KEEL_TRY(require_comm(c, s, "all_gather"));
        KEEL_TRY(one_rank_only(c, "all_gather"));
        return copy(s, in, out, bytes_per_rank);
    });
}

keel_error* comm_reduce_scatter(keel_comm c, keel_stream s, keel_device_addr in, keel_device_addr out,
                                std::uint64_t count_per_rank, keel_dtype dtype, keel_reduce_op op) {
    return entry(fake_build.type, "comm_reduce_scatter", [&]() -> Result<void> {
        KEEL_TRY(require_comm(c, s, "reduce_scatter"));
        KEEL_TRY(one_rank_only(c, "reduce_scatter"));
        KEEL_TRY_ASSIGN(const std::uint64_t bytes, reduction_bytes(dtype, op, count_per_rank, "reduce_scatter"));
        return copy(s, in, out, bytes);
    });
}

keel_error* comm_send_recv(keel_comm c, keel_stream s, const keel_p2p_op* ops, std::uint32_t count) {
    return entry(fake_build.type, "comm_send_recv", [&]() -> Result<void> {
        KEEL_TRY(require_comm(c, s, "send_recv"));
        KEEL_TRY(one_rank_only(c, "send_recv"));
        if (count == 0) return ok();
        KEEL_TRY(keel::plugin::require_non_null(ops, "ops"));
        // One rank has no other rank to send to or receive from.
        return Error(KEEL_STATUS_INVALID_ARGUMENT, "send_recv on " + c->where + ": peer " +
                                                       std::to_string(ops[0].peer) + " is not another rank");
    });
}

// keel.h 1.5: the batch read through the plugin support's reader (its
// op_size and newer-field checks), then as comm_send_recv.
keel_error* comm_send_recv_sized(keel_comm c, keel_stream s, const keel_p2p_op* ops, std::uint32_t count,
                                 std::size_t op_size) {
    return entry(fake_build.type, "comm_send_recv_sized", [&]() -> Result<void> {
        KEEL_TRY(require_comm(c, s, "send_recv"));
        KEEL_TRY(one_rank_only(c, "send_recv"));
        KEEL_TRY_ASSIGN(const std::vector<keel_p2p_op> known, keel::plugin::read_p2p_ops(ops, count, op_size));
        if (known.empty()) return ok();
        return Error(KEEL_STATUS_INVALID_ARGUMENT, "send_recv on " + c->where + ": peer " +
                                                       std::to_string(known[0].peer) + " is not another rank");
    });
}

void fill(keel_plugin_api& t) {
    t.comm_create = &comm_create;
    t.comm_destroy = &comm_destroy;
    t.comm_abort = &comm_abort;
    t.comm_all_reduce = &comm_all_reduce;
    t.comm_broadcast = &comm_broadcast;
    t.comm_all_gather = &comm_all_gather;
    t.comm_reduce_scatter = &comm_reduce_scatter;
    t.comm_send_recv = &comm_send_recv;
    // A host function that fails its stream while work queued behind it
    // still runs (as CUDA's): what the runtime must guard collectives against.
    t.stream_enqueue_fallible_host_func = &stream_enqueue_fallible_host_func;
    if (fake_build.minor != 0 && fake_build.minor < 5) {
        // As a plugin built against keel.h 1.4: its table ends before 1.5.
        t.abi_minor = fake_build.minor;
        t.struct_size = KEEL_PLUGIN_API_STRUCT_SIZE_1_4;
    } else {
        t.comm_send_recv_sized = &comm_send_recv_sized;
    }
}

}  // namespace fake_comm
