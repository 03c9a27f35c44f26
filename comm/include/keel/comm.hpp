// keel::comm: collectives and point-to-point transfers between processes,
// enqueued on keel streams. A separate library (libkeel_comm.so) so that a
// framework that never communicates never loads its engine (Gloo).
#pragma once

#include <keel/buffer.hpp>
#include <keel/device.hpp>
#include <keel/keel.h>
#include <keel/result.hpp>
#include <keel/stream.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#if defined(__GNUC__) || defined(__clang__)
#define KEEL_COMM_API __attribute__((visibility("default")))
#else
#define KEEL_COMM_API
#endif

namespace keel {

enum class ReduceOp : std::uint32_t { sum, prod, max, min, avg };

// A key-value store the ranks meet through (rendezvous). Values are
// written once per key. A cheap shared handle (copies share one store);
// its functions may be called from any thread.
//
// Many jobs may share one store: for_job() puts a job's keys under its
// own name (from_env() does so with the launcher's job id), and a
// communicator erases the keys it wrote once every rank is connected, so a
// store serves job after job. A key left by a process that has ended (a
// job that died while its ranks met) is reported as such at create.
class KEEL_COMM_API Store {
public:
    using SetFn = std::function<Result<void>(std::string_view key, std::span<const std::byte> value)>;
    // Waits up to `timeout` for `key` to be set; a key not set in time is
    // an error (UNAVAILABLE, naming the key). keel's stores return
    // FAILED_PRECONDITION from set() for a key already set, which is how a
    // rank claimed twice is told apart at once.
    using GetFn = std::function<Result<std::vector<std::byte>>(std::string_view key,
                                                              std::chrono::milliseconds timeout)>;
    // Removes `key`; a key that is not set is not an error.
    using EraseFn = std::function<Result<void>(std::string_view key)>;

    // A store given as callbacks: frameworks plug their own (c10d Store,
    // Paddle's TCPStore). set and get must be non-empty; erase is optional
    // (without it, keys stay in the store). All callable from any thread. What a
    // callback throws comes back from keel as UNAVAILABLE naming the callback and
    // the key: it never leaves a keel call or ends a keel thread.
    [[nodiscard]] static Result<Store> callbacks(SetFn set, GetFn get, EraseFn erase = {});
    // A directory shared by the ranks (one machine, or a shared file
    // system); it must exist and be writable.
    [[nodiscard]] static Result<Store> file(std::string directory);
    // A Redis server (over hiredis). UNAVAILABLE when the server cannot be
    // reached.
    [[nodiscard]] static Result<Store> redis(std::string host, int port);
    // A TCP store: the process with `serve` hosts it on `port` (all
    // addresses; rank 0, as torchrun's MASTER_PORT), every process connects
    // to host:port, retrying for up to `timeout` while the host starts.
    // Needs neither a shared file system nor a server of its own. The
    // hosting lives as long as a copy of the returned store does.
    // UNAVAILABLE when host:port is not reached within `timeout`, or
    // `port` cannot be bound.
    [[nodiscard]] static Result<Store> tcp(std::string host, int port, bool serve,
                                           std::chrono::milliseconds timeout = std::chrono::seconds(30));
    // KEEL_COMM_STORE: "file:<directory>" (what keel-launch sets on one
    // host), "redis:<host>:<port>" or "tcp:<host>:<port>" (hosted by RANK
    // 0); unset, MASTER_ADDR and MASTER_PORT (torchrun's) mean
    // tcp:$MASTER_ADDR:$MASTER_PORT. Scoped to the job id job_from_env()
    // finds, if any. NOT_FOUND when none of them is set.
    [[nodiscard]] static Result<Store> from_env();

    // The job's id from the launcher: KEEL_COMM_JOB_ID (keel-launch sets
    // it), TORCHELASTIC_RUN_ID (torchrun's --rdzv-id; "none" is no id),
    // SLURM_JOB_ID[.SLURM_STEP_ID]. Empty when none is set.
    [[nodiscard]] static std::string job_from_env();

    // This store with every key under "job/<job>/" (nested when called
    // again); `job` empty: this store.
    [[nodiscard]] Store for_job(std::string_view job) const;

    [[nodiscard]] Result<void> set(std::string_view key, std::span<const std::byte> value) const;
    [[nodiscard]] Result<std::vector<std::byte>> get(std::string_view key,
                                                     std::chrono::milliseconds timeout) const;
    // Removes `key`; does nothing (OK) on a callbacks store without erase.
    [[nodiscard]] Result<void> erase(std::string_view key) const;

    struct Functions;

private:
    explicit Store(std::shared_ptr<const Functions> fns);
    std::shared_ptr<const Functions> fns_;
    std::string prefix_;
};

// Rank and world size from the launcher's variables, in this order:
// RANK/WORLD_SIZE (torchrun, keel-launch), SLURM_PROCID/SLURM_NTASKS,
// OMPI_COMM_WORLD_RANK/OMPI_COMM_WORLD_SIZE. NOT_FOUND when none is set.
struct RankInfo {
    int rank = 0;
    int size = 1;
};
[[nodiscard]] KEEL_COMM_API Result<RankInfo> rank_from_env();

struct CommOptions {
    // Bound on every blocking step: meeting the peers at create, and each
    // operation once it runs (a dead peer or one that never comes fails the
    // operation within it).
    std::chrono::milliseconds timeout{30000};
    // Unique per communicator on one store; empty: "keel/comm/<n>", n
    // counting the communicators this process created (the same on every
    // rank when they create them in the same order).
    std::string key_prefix;
    // Where this rank listens: a network interface ("eth0") or a host
    // name/address. Both empty: the interface KEEL_COMM_INTERFACE names
    // (else GLOO_SOCKET_IFNAME, as c10d's Gloo reads it), else 127.0.0.1
    // (one machine).
    std::string interface;
    std::string hostname;
    // Before each collective the ranks compare what they enqueued (one
    // small all-gather), and the two sides of each send and its receive
    // tell each other their sizes (8 bytes each way): counts that differ
    // fail the operation on every rank involved instead of stopping the
    // process inside Gloo (a receive smaller than its send). Costs one
    // round trip per operation; off, such a mismatch stops the process, and
    // a receive larger than its send gets the message in its first bytes
    // and zeros after it. The generic path only: the native path checks
    // what its plugin checks (NCCL compares nothing: a mismatch there runs
    // until the timeout, or gives wrong data; an engine that compares fails
    // the operation's stream, and error() has its code). To find such a
    // mismatch, run the job once with KEEL_COMM_GENERIC=1.
    bool check_sizes = true;
    // Use the native entries of the device's plugin (keel.h 1.4: the CUDA
    // plugin over NCCL) where it has them and accepts the group; false, or
    // KEEL_COMM_GENERIC=1 (which overrides), forces the generic path. Must
    // be the same on every rank.
    bool native = true;
};

// Which engine runs a communicator's operations, and why
// (Communicator::engine_kind()).
enum class CommEngine : std::uint32_t {
    native = 0,              // the plugin's communication entries (keel.h 1.4)
    generic_forced = 1,      // Gloo: CommOptions::native is false, or KEEL_COMM_GENERIC=1
    generic_no_entries = 2,  // Gloo: the device's plugin has no communication entries
    generic_declined = 3,    // Gloo: the plugin declined the group (engine_description() says why)
};

// One entry of a batched point-to-point call.
struct P2P {
    enum class Kind : std::uint32_t { send, recv };
    Kind kind = Kind::send;
    DeviceView view;
    int peer = 0;
    static P2P send(DeviceView view, int peer) { return {Kind::send, view, peer}; }
    static P2P recv(DeviceView view, int peer) { return {Kind::recv, view, peer}; }
};

// A group of `size` processes (ranks) that communicate through memory of
// one device per rank. Operations are enqueued on a keel stream of that
// device: they run when the stream reaches them, in stream order with the
// stream's other work. On the generic path the enqueueing thread never
// waits for a peer; on the native path it may, as the plugin's engine does
// (NCCL connects to a peer at their first operation together, up to the
// timeout). Order with compute streams through fences or events, as for
// any work.
//
// Every rank must enqueue the same operations in the same order (as with
// NCCL): a communicator runs its operations one after another, in the order
// they were enqueued, whatever their streams. Use one stream per
// communicator unless you order the streams yourself.
//
// Errors: bad input (ranks out of range, sizes that do not match, memory of
// another device, an empty stream) comes back from the call, which then
// enqueued nothing. An operation that fails while it runs (timeout, a dead
// peer, abort()) fails its stream at that point, sticky, where the plugin
// lets a host function fail its stream (Stream::host_funcs_can_fail, keel.h
// 1.4): synchronize, query, events recorded after it and later enqueues
// report the error, whose message names the operation, the communicator and
// the peer(s), by rank. Operations the communicator did not run after such a
// failure fail their streams the same way. It is also the communicator's
// sticky error: every later operation fails with it at enqueue, and error()
// returns it. A failure fails the communicator on every rank, as abort()
// does (the peers' operations fail at once, not at their timeout), and so
// does an operation whose stream failed before it (its input never arrived:
// it never sends or reduces stale data) or refused it. Counts, dtypes,
// reductions or roots that differ between ranks, and a send and its receive
// of different sizes, are FAILED_PRECONDITION (CommOptions::check_sizes);
// a dead peer or a timeout is UNAVAILABLE. No signal (SIGPIPE) from a dead
// peer reaches the process. On a plugin without that entry the stream goes
// on (the operation's output is unspecified): check error() after
// synchronising.
//
// The native path (keel.h 1.4 entries, e.g. NCCL) keeps the stream rules
// above (the plugin fails the stream of a failed operation), but error()
// and later enqueues learn of a failure the plugin found while running
// (its watchdog's timeout) only once one of its entries reports it: until
// the next enqueue after it, error() may still be OK. Synchronize the
// stream to see such a failure.
//
// Move-only. A moved-from communicator has no group: its operations,
// set_timeout() and error() return FAILED_PRECONDITION saying so, abort()
// does nothing, and its accessors (rank(), device(), ...) stop the program
// with that message. Threads: send; enqueue members are const and may be called
// from several threads (their order is the order the calls return);
// abort() and error() from any thread at any time.
class KEEL_COMM_API Communicator {
public:
    // Meets the other ranks through `store` (collective: blocks until all
    // `size` ranks arrived, at most options.timeout). INVALID_ARGUMENT for
    // rank outside [0, size), size < 1; UNAVAILABLE when the store or a
    // peer cannot be reached in time; FAILED_PRECONDITION when two
    // processes claim one rank.
    [[nodiscard]] static Result<Communicator> create(const Device& device, const Store& store, int rank,
                                                     int size, const CommOptions& options = {});
    // Rank and size from rank_from_env(), the store from Store::from_env().
    [[nodiscard]] static Result<Communicator> create_from_env(const Device& device,
                                                              const CommOptions& options = {});

    Communicator(const Communicator&) = delete;
    Communicator& operator=(const Communicator&) = delete;
    Communicator(Communicator&&) noexcept;
    Communicator& operator=(Communicator&&) noexcept;
    // Waits for the operations already enqueued (each bounded by the
    // timeout), then leaves the group.
    ~Communicator();

    [[nodiscard]] int rank() const noexcept;
    [[nodiscard]] int size() const noexcept;
    [[nodiscard]] const Device& device() const noexcept;
    // The prefix of this communicator's keys in its store
    // (CommOptions::key_prefix, or "keel/comm/<n>"); error messages name the
    // communicator by it.
    [[nodiscard]] const std::string& store_prefix() const noexcept;
    [[deprecated("name() is the store prefix: use store_prefix()")]] [[nodiscard]] const std::string& name()
        const noexcept;
    // Which engine runs the operations, and why.
    [[nodiscard]] CommEngine engine_kind() const noexcept;
    // engine_kind() == CommEngine::native.
    [[nodiscard]] bool uses_native_engine() const noexcept;
    // The same in words, for people and logs (its wording may change: test
    // engine_kind()): "native (cuda plugin)", "generic (Gloo): the plugin
    // declined: <its reason>; staged through pinned host memory" (or, on a
    // host-addressable device, "...; Gloo works on device memory in place").
    [[nodiscard]] const std::string& engine_description() const noexcept;
    [[deprecated("use engine_kind(), or engine_description() for the words")]] [[nodiscard]] const std::string&
    engine() const noexcept;

    // ---- collectives (sizes in bytes must be a multiple of the dtype's) ----

    // out[i] = op over ranks of in[i]; in and out the same size (may be the
    // same view: in place). avg: floats are divided by size() before they
    // are summed (NCCL's pre-multiplied sum), so the mean never overflows
    // where it is representable; integers give the exact mean rounded
    // toward zero. max and min: a NaN on any rank gives NaN on every rank.
    [[nodiscard]] Result<void> all_reduce(const Stream& stream, DeviceView in, DeviceView out, keel_dtype dtype,
                                          ReduceOp op) const;
    [[nodiscard]] Result<void> all_reduce(const Stream& stream, DeviceView inout, keel_dtype dtype,
                                          ReduceOp op) const;
    // out = root's in on every rank (in is read on root only; may be out).
    [[nodiscard]] Result<void> broadcast(const Stream& stream, DeviceView in, DeviceView out, int root) const;
    [[nodiscard]] Result<void> broadcast(const Stream& stream, DeviceView inout, int root) const;
    // out = the ins of ranks 0..size-1 one after another; out.size() ==
    // size() * in.size().
    [[nodiscard]] Result<void> all_gather(const Stream& stream, DeviceView in, DeviceView out) const;
    // out = part `rank` of (op over ranks of in); in.size() == size() * out.size().
    [[nodiscard]] Result<void> reduce_scatter(const Stream& stream, DeviceView in, DeviceView out,
                                              keel_dtype dtype, ReduceOp op) const;

    // Every rank waits here until all ranks reached it (in stream order:
    // work enqueued after it on `stream` runs once every rank's stream got
    // to its barrier).
    [[nodiscard]] Result<void> barrier(const Stream& stream) const;
    // out on `root` = op over ranks of in (as all_reduce); `out` is written
    // on root only (other ranks may pass DeviceView()); in.size() ==
    // out.size() on root.
    [[nodiscard]] Result<void> reduce(const Stream& stream, DeviceView in, DeviceView out, keel_dtype dtype,
                                      ReduceOp op, int root) const;
    // out on `root` = the ins of ranks 0..size-1 one after another
    // (out.size() == size() * in.size()); out is ignored elsewhere.
    [[nodiscard]] Result<void> gather(const Stream& stream, DeviceView in, DeviceView out, int root) const;
    // out on rank r = part r of root's in (in.size() == size() * out.size());
    // in is read on root only.
    [[nodiscard]] Result<void> scatter(const Stream& stream, DeviceView in, DeviceView out, int root) const;
    // Part j of in (in.size() / size() bytes) goes to rank j, which puts it
    // at part `rank` of its out; in and out the same size, a multiple of
    // size().
    [[nodiscard]] Result<void> all_to_all(const Stream& stream, DeviceView in, DeviceView out) const;
    // Uneven all_to_all: in_sizes[j] bytes from in (parts one after another)
    // go to rank j; out_sizes[j] bytes from rank j land in out (likewise).
    // Both spans have size() entries; rank j's in_sizes[rank] must equal
    // this rank's out_sizes[j] (checked with CommOptions::check_sizes).
    [[nodiscard]] Result<void> all_to_all(const Stream& stream, DeviceView in, std::span<const std::uint64_t> in_sizes,
                                          DeviceView out, std::span<const std::uint64_t> out_sizes) const;

    // ---- point to point --------------------------------------------------

    // Sends and receives that progress together (the peer's matching call
    // may list its own in any order); per pair of ranks, messages match in
    // the order they were enqueued. A rank may not send to itself.
    [[nodiscard]] Result<void> send_recv(const Stream& stream, std::span<const P2P> ops) const;
    [[nodiscard]] Result<void> send(const Stream& stream, DeviceView view, int peer) const;
    [[nodiscard]] Result<void> recv(const Stream& stream, DeviceView view, int peer) const;
    // Takes the buffer and keeps it until the send ran (no synchronisation,
    // no use after free): the pipeline's activation handed to the next rank.
    [[nodiscard]] Result<void> send(const Stream& stream, Buffer&& buffer, int peer) const;
    // Takes the buffers of the batch's entries and keeps them until it ran.
    [[nodiscard]] Result<void> send_recv(const Stream& stream, std::span<const P2P> ops,
                                         std::vector<Buffer>&& keep) const;

    // ---- timeout ---------------------------------------------------------

    // The bound on each wait of an operation enqueued after this returns
    // (its turn behind the communicator's earlier operations, each exchange
    // with its peers), counted from when its stream reaches it;
    // CommOptions::timeout until changed. Operations already enqueued keep
    // theirs. For one call's own bound, set it before that call (from the
    // thread that enqueues it). A peer that does not reach the operation in
    // time fails it (UNAVAILABLE, naming the operation, this rank, the peer
    // and the timeout) and the communicator on every rank. Any thread.
    // INVALID_ARGUMENT for a timeout <= 0; UNIMPLEMENTED on the native path
    // (keel.h 1.4's engines take their timeout once, at create).
    [[nodiscard]] Result<void> set_timeout(std::chrono::milliseconds timeout);
    [[nodiscard]] std::chrono::milliseconds timeout() const noexcept;

    // ---- failure ---------------------------------------------------------

    // Fails the operations in flight and every later one (FAILED_PRECONDITION
    // "aborted"), and their streams as above. Any thread, any time; idempotent.
    void abort() const noexcept;
    // The sticky error, if an operation failed (or abort() was called).
    [[nodiscard]] Result<void> error() const;

    struct Impl;

private:
    explicit Communicator(std::shared_ptr<Impl> impl) noexcept;
    std::shared_ptr<Impl> impl_;
};

}  // namespace keel
