#include "collectives.hpp"

#include "reduce.hpp"

#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/alltoall.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/reduce.h>

#include <cstring>
#include <vector>

namespace keel::comm {
namespace {

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

void all_reduce_in_place(std::byte* data, std::size_t count, keel_dtype dtype, ReduceFn fn,
                         const std::shared_ptr<gloo::Context>& context, std::chrono::milliseconds timeout) {
    gloo::AllreduceOptions o(context);
    with_carrier(dtype_size(dtype), [&](auto carrier) {
        using T = decltype(carrier);
        o.setOutput(reinterpret_cast<T*>(data), count);
    });
    o.setReduceFunction(fn);
    o.setTimeout(timeout);
    gloo::allreduce(o);
}

void all_reduce(const Op& op, const std::shared_ptr<gloo::Context>& context, std::chrono::milliseconds timeout) {
    const std::size_t es = dtype_size(op.dtype);
    const std::size_t count = op.bytes / es;
    if (op.reduce != ReduceOp::avg) {
        gloo::AllreduceOptions o(context);
        with_carrier(es, [&](auto carrier) {
            using T = decltype(carrier);
            if (op.in != op.out) o.setInput(reinterpret_cast<T*>(op.in), count);
            o.setOutput(reinterpret_cast<T*>(op.out), count);
        });
        o.setReduceFunction(reduce_fn(op.dtype, op.reduce));
        o.setTimeout(timeout);
        gloo::allreduce(o);
        return;
    }
    // avg: divided (floats) or split (integers) before the sum, on the
    // output (the input may be the caller's memory, read only).
    if (op.in != op.out && op.bytes > 0) std::memcpy(op.out, op.in, op.bytes);
    std::vector<std::int64_t> remainders(avg_splits(op.dtype) ? count : 0);
    avg_before(op.dtype, op.out, remainders.data(), count, context->size);
    all_reduce_in_place(op.out, count, op.dtype, reduce_fn(op.dtype, ReduceOp::sum), context, timeout);
    if (!remainders.empty())
        all_reduce_in_place(reinterpret_cast<std::byte*>(remainders.data()), count, KEEL_DTYPE_I64,
                            reduce_fn(KEEL_DTYPE_I64, ReduceOp::sum), context, timeout);
    avg_after(op.dtype, op.out, remainders.data(), count, context->size);
}

// To the root only (Gloo's ring reduce, then a gather to the root): half
// of all_reduce's traffic. Off the root `out` is scratch (keel's staging).
// avg stays an all_reduce: its division before the sum and its integer
// remainders need the sum on every rank.
void reduce_to_root(const Op& op, const std::shared_ptr<gloo::Context>& context, std::chrono::milliseconds timeout) {
    if (op.reduce == ReduceOp::avg) return all_reduce(op, context, timeout);
    const std::size_t es = dtype_size(op.dtype);
    const std::size_t count = op.bytes / es;
    gloo::ReduceOptions o(context);
    with_carrier(es, [&](auto carrier) {
        using T = decltype(carrier);
        if (op.in != op.out) o.setInput(reinterpret_cast<T*>(op.in), count);  // else in place
        o.setOutput(reinterpret_cast<T*>(op.out), count);
    });
    o.setRoot(op.root);
    o.setReduceFunction(reduce_fn(op.dtype, op.reduce));
    o.setTimeout(timeout);
    gloo::reduce(o);
}

void broadcast(const Op& op, const std::shared_ptr<gloo::Context>& context, std::chrono::milliseconds timeout) {
    if (context->rank == op.root && op.in != op.out) std::memcpy(op.out, op.in, op.bytes);
    gloo::BroadcastOptions o(context);
    o.setOutput(reinterpret_cast<std::uint8_t*>(op.out), op.bytes);
    o.setRoot(op.root);
    o.setTimeout(timeout);
    gloo::broadcast(o);
}

void all_gather(const Op& op, const std::shared_ptr<gloo::Context>& context, std::chrono::milliseconds timeout) {
    gloo::AllgatherOptions o(context);
    o.setInput(reinterpret_cast<std::uint8_t*>(op.in), op.bytes);
    o.setOutput(reinterpret_cast<std::uint8_t*>(op.out), op.bytes * static_cast<std::size_t>(context->size));
    o.setTimeout(timeout);
    gloo::allgather(o);
}

// Each rank receives every rank's part `rank` (all-to-all, (size-1)/size of
// the data over the wire, as a ring reduce-scatter) and reduces them.
void reduce_scatter(const Op& op, const std::shared_ptr<gloo::Context>& context, std::chrono::milliseconds timeout) {
    const std::uint64_t k = op.bytes;
    const std::uint64_t total = k * static_cast<std::uint64_t>(context->size);
    gloo::AlltoallOptions o(context);
    o.setInput(reinterpret_cast<std::uint8_t*>(op.in), total);
    o.setOutput(reinterpret_cast<std::uint8_t*>(op.scratch), total);
    o.setTimeout(timeout);
    gloo::alltoall(o);
    const std::size_t count = k / dtype_size(op.dtype);
    const std::byte* all = op.scratch;
    if (op.reduce == ReduceOp::avg) {
        average_parts(op.dtype, op.out, op.scratch, count, context->size);
    } else if (context->size == 1) {
        std::memcpy(op.out, all, k);
    } else {
        const ReduceFn fn = reduce_fn(op.dtype, op.reduce);
        fn(op.out, all, all + k, count);
        for (int j = 2; j < context->size; ++j) fn(op.out, op.out, all + static_cast<std::size_t>(j) * k, count);
    }
}

}  // namespace

void run_collective(const Op& op, const std::shared_ptr<gloo::Context>& context, std::chrono::milliseconds timeout) {
    switch (op.kind) {
        case OpKind::all_reduce: return all_reduce(op, context, timeout);
        case OpKind::broadcast: return broadcast(op, context, timeout);
        case OpKind::all_gather: return all_gather(op, context, timeout);
        case OpKind::reduce_scatter: return reduce_scatter(op, context, timeout);
        case OpKind::reduce: return reduce_to_root(op, context, timeout);
        case OpKind::barrier: {
            gloo::BarrierOptions o(context);
            o.setTimeout(timeout);
            gloo::barrier(o);
            return;
        }
        default: break;  // send_recv batches are transfers
    }
}

}  // namespace keel::comm
