// One operation of the generic path, as its gate runs it: plain data (no
// callable, no text), so that enqueueing one costs a single allocation; the
// text naming it is made only when it fails.
#pragma once

#include "staging_cache.hpp"

#include <keel/comm.hpp>

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace keel::comm {

class Preamble;

enum class OpKind : std::uint8_t {
    all_reduce = 1,
    broadcast = 2,
    all_gather = 3,
    reduce_scatter = 4,
    send_recv = 5,
    barrier = 6,
    reduce = 7,  // an all_reduce whose result only the root copies out
    // Not operations of their own: what a send_recv batch that makes one of
    // these collectives tells every rank (Op::group).
    gather = 8,
    scatter = 9,
    all_to_all = 10,
};

// One send or receive of a batch, on host memory Gloo reads or writes
// (`data` null when `size` is 0). `slot` matches the peer's transfer the
// other way.
struct Transfer {
    bool send;
    int peer;
    std::uint64_t slot;
    std::byte* data;
    std::uint64_t size;
};

// "send to peer 1", "recv from peer 0": a transfer in a message.
[[nodiscard]] std::string describe(const Transfer& t);

// What every rank must agree on before a collective runs (kind, bytes,
// dtype, reduction or root): Gloo stops the process when counts differ.
using Signature = std::array<std::uint64_t, 4>;

struct Op {
    explicit Op(OpKind k) noexcept : kind(k) {}

    OpKind kind;
    // all_reduce, broadcast: the message; all_gather: each rank's part;
    // reduce_scatter: each rank's result.
    std::uint64_t bytes = 0;
    keel_dtype dtype = KEEL_DTYPE_F32;
    ReduceOp reduce = ReduceOp::sum;
    int root = 0;
    // Host memory Gloo works on: pinned staging, or the device's own memory
    // where the host may dereference it. `in` may equal `out` (in place).
    std::byte* in = nullptr;
    std::byte* out = nullptr;
    std::byte* scratch = nullptr;  // reduce_scatter: every rank's parts
    std::vector<Transfer> transfers;  // send_recv
    std::uint64_t collective_index = 0;  // among the communicator's collectives
    std::uint64_t index = 0;             // among all the communicator's operations (the hang doctor's #)
    // The bound on each of its waits (its turn, every Gloo call), taken from
    // the communicator's timeout when it was enqueued (Communicator::set_timeout).
    std::chrono::milliseconds timeout{0};
    // The staging blocks, kept until the stream passed the output copies;
    // later operations on the same stream may share them (Impl::stage).
    std::vector<std::shared_ptr<StagingLease>> staging;
    // send_recv: the sizes both sides of each transfer tell each other
    // before the data moves (preamble.hpp); null for a collective or when
    // CommOptions::check_sizes is off.
    std::shared_ptr<Preamble> preamble;
    // send_recv: the gather, scatter or all_to_all this batch makes, which
    // every rank compares like a collective's signature (a root or part size
    // that differs fails it on every rank at once, not at the timeout on the
    // ranks whose peers never send); kind 0 for a plain batch.
    Signature group{};
    // Its gate ran and failed; guarded by Communicator::Impl's mutex.
    bool gate_failed = false;
    // The stream it was enqueued on, for the hang doctor (what it is queued
    // behind); only compared, never used to enqueue.
    keel_stream stream = nullptr;

    [[nodiscard]] bool collective() const noexcept { return kind != OpKind::send_recv; }
    // Every rank enqueues it at the same point: its signature is compared.
    [[nodiscard]] bool agreed_by_all() const noexcept { return collective() || group[0] != 0; }
    [[nodiscard]] Signature signature() const noexcept;
    [[nodiscard]] const char* what() const noexcept;
    // Its arguments, for a failure message: "f32 sum, 4096 bytes".
    [[nodiscard]] std::string detail() const;
};

// "all_reduce of 64 bytes (f32 sum)": a signature in a message.
// "all_reduce", "gather"...; "?" for a value that names no kind.
[[nodiscard]] const char* kind_name(OpKind kind) noexcept;
[[nodiscard]] std::string signature_text(const Signature& s);

// The ranks enqueued operations that do not match (counts, dtypes,
// reductions, roots, a send's size and its receive's): the caller's error,
// FAILED_PRECONDITION, not a network failure.
struct Mismatch : std::runtime_error {
    using std::runtime_error::runtime_error;
};

}  // namespace keel::comm
