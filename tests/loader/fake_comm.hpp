// One-rank communication entries (keel.h 1.4) of the fake plugin's comm
// variant: a group of one rank needs no engine (every operation copies its
// input to its output on the stream), so the runtime's dispatch to native
// entries and keel-cts's checks of the set run without a GPU. A larger group
// is declined with UNIMPLEMENTED on every rank alike, as keel.h asks, and
// the runtime falls back to its generic path. These variants also have
// stream_enqueue_fallible_host_func (fake_plugin.cpp). Included by fake_plugin.cpp
// at global scope (keel_comm_t is keel.h's); uses its device, stream and
// worker types and its helpers.
#pragma once

struct keel_comm_t {
    keel_device_t* device = nullptr;
    std::string where;  // "comm '<prefix>' rank 0/1"
    std::atomic<bool> aborted{false};
    // A key prefix naming "times-out": the first operation fails as an
    // engine's timeout does (UNAVAILABLE, the communicator failed), so the
    // runtime's handling of a native failure runs without a GPU.
    bool times_out = false;
};

namespace fake_comm {

Result<void> require_comm(keel_comm c, keel_stream s, const char* op) {
    if (c == nullptr) return Error(KEEL_STATUS_INVALID_ARGUMENT, std::string(op) + ": comm is null");
    if (c->aborted.load())
        return Error(KEEL_STATUS_FAILED_PRECONDITION, std::string(op) + " on " + c->where + ": aborted");
    if (c->times_out) {
        c->aborted.store(true);
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

keel_error* comm_create(keel_device d, const keel_comm_config* c_config, keel_comm* out) {
    return entry(fake_build.type, "comm_create", [&]() -> Result<void> {
        KEEL_TRY(keel::plugin::require_non_null(d, "device"));
        KEEL_TRY(keel::plugin::require_non_null(out, "out_comm"));
        KEEL_TRY_ASSIGN(const keel::plugin::CommConfig config, keel::plugin::read_comm_config(c_config));
        // Decided from the config alone, so every rank answers the same.
        if (config.size != 1)
            return Error(KEEL_STATUS_UNIMPLEMENTED, "the fake engine runs one-rank groups only, not " +
                                                        std::to_string(config.size) + " ranks");
        // Through the store and back, as a real engine meets its peers; a
        // key set twice (two communicators under one prefix) fails here.
        const std::string claim = "fake comm of " + d->name;
        KEEL_TRY(config.set("rank/0", claim));
        KEEL_TRY_ASSIGN(const std::string back, config.get("rank/0"));
        if (back != claim)
            return Error(KEEL_STATUS_FAILED_PRECONDITION, config.where() + ": its key holds another rank's claim");
        auto comm = std::make_unique<keel_comm_t>();
        comm->device = d;
        comm->where = config.where();
        comm->times_out = comm->where.find("times-out") != std::string::npos;
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
        c->aborted.store(true);
        return ok();
    });
}

keel_error* comm_all_reduce(keel_comm c, keel_stream s, keel_device_addr in, keel_device_addr out,
                            std::uint64_t count, keel_dtype dtype, keel_reduce_op op) {
    return entry(fake_build.type, "comm_all_reduce", [&]() -> Result<void> {
        KEEL_TRY(require_comm(c, s, "all_reduce"));
        KEEL_TRY_ASSIGN(const std::uint64_t bytes, reduction_bytes(dtype, op, count, "all_reduce"));
        return copy(s, in, out, bytes);  // every reduction of one rank is its input
    });
}

keel_error* comm_broadcast(keel_comm c, keel_stream s, keel_device_addr in, keel_device_addr out,
                           std::uint64_t bytes, std::int32_t root) {
    return entry(fake_build.type, "comm_broadcast", [&]() -> Result<void> {
        KEEL_TRY(require_comm(c, s, "broadcast"));
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
        return copy(s, in, out, bytes_per_rank);
    });
}

keel_error* comm_reduce_scatter(keel_comm c, keel_stream s, keel_device_addr in, keel_device_addr out,
                                std::uint64_t count_per_rank, keel_dtype dtype, keel_reduce_op op) {
    return entry(fake_build.type, "comm_reduce_scatter", [&]() -> Result<void> {
        KEEL_TRY(require_comm(c, s, "reduce_scatter"));
        KEEL_TRY_ASSIGN(const std::uint64_t bytes, reduction_bytes(dtype, op, count_per_rank, "reduce_scatter"));
        return copy(s, in, out, bytes);
    });
}

keel_error* comm_send_recv(keel_comm c, keel_stream s, const keel_p2p_op* ops, std::uint32_t count) {
    return entry(fake_build.type, "comm_send_recv", [&]() -> Result<void> {
        KEEL_TRY(require_comm(c, s, "send_recv"));
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
