#include "rendezvous.hpp"

#include "failure_notice.hpp"
#include "key_owner.hpp"
#include "sigpipe_guard.hpp"
#include "written_keys.hpp"

#include <keel/environment.hpp>

#include <gloo/barrier.h>

#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/address.h>
#include <gloo/transport/tcp/device.h>

#include <chrono>
#include <cstring>
#include <net/if.h>
#include <mutex>
#include <optional>
#include <span>
#include <stdexcept>
#include <unistd.h>
#include <vector>

namespace keel::comm {
namespace {

std::span<const std::byte> bytes_of(const std::string& s) { return std::as_bytes(std::span(s.data(), s.size())); }

// keel's Store as Gloo's: Gloo reports failures by exceptions, which
// connect() catches.
class GlooStore final : public gloo::rendezvous::Store {
public:
    GlooStore(const keel::Store& store, std::string prefix, std::chrono::milliseconds timeout)
        : store_(store), prefix_(std::move(prefix)), timeout_(timeout) {}

    void set(const std::string& key, const std::vector<char>& data) override {
        Result<void> r = store_.set(prefix_ + key, std::as_bytes(std::span(data.data(), data.size())));
        if (!r.ok()) throw std::runtime_error(r.error().message());
    }
    std::vector<char> get(const std::string& key) override {
        Result<std::vector<std::byte>> r = store_.get(prefix_ + key, timeout_);
        if (!r.ok()) throw std::runtime_error(r.error().message());
        std::vector<char> out(r->size());
        std::memcpy(out.data(), r->data(), out.size());
        return out;
    }
    void wait(const std::vector<std::string>& keys) override { wait(keys, timeout_); }
    void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) override {
        for (const std::string& key : keys) {
            Result<std::vector<std::byte>> r = store_.get(prefix_ + key, timeout);
            if (!r.ok()) throw std::runtime_error(r.error().message());
        }
    }

private:
    keel::Store store_;
    std::string prefix_;
    std::chrono::milliseconds timeout_;
};

// The local end of this rank's connection to each rank (none to itself):
// once a Gloo pair connected, its address() is its socket's own address
// (Gloo sets it from getsockname on the connected socket, on the side that
// accepted and on the side that connected alike).
std::vector<sockaddr_storage> pair_ends(gloo::rendezvous::Context& context) {
    std::vector<sockaddr_storage> ends(static_cast<std::size_t>(context.size));
    for (int peer = 0; peer < context.size; ++peer) {
        if (peer == context.rank) continue;
        ends[static_cast<std::size_t>(peer)] =
            gloo::transport::tcp::Address(context.getPair(peer)->address().bytes()).getSockaddr();
    }
    return ends;
}

// This rank's connections to its peers, both ends: the remote end of its
// connection to a peer is the local end of the peer's connection to it,
// which each rank puts in the store under `name`.
Result<std::vector<Connection>> pair_connections(const Store& store, const std::string& name,
                                                 gloo::rendezvous::Context& context,
                                                 std::chrono::milliseconds timeout) {
    const std::vector<sockaddr_storage> mine = pair_ends(context);
    const auto key = [&](int rank) { return name + "/socket-ends/" + std::to_string(rank); };
    KEEL_TRY(store.set(key(context.rank), std::as_bytes(std::span(mine))));
    std::vector<Connection> connections;
    for (int peer = 0; peer < context.size; ++peer) {
        if (peer == context.rank) continue;
        KEEL_TRY_ASSIGN(const std::vector<std::byte> theirs, store.get(key(peer), timeout));
        const std::size_t at = static_cast<std::size_t>(context.rank) * sizeof(sockaddr_storage);
        if (theirs.size() != mine.size() * sizeof(sockaddr_storage))
            return Error(KEEL_STATUS_INTERNAL, "rank " + std::to_string(peer) + " put " +
                                                   std::to_string(theirs.size()) + " bytes of socket ends");
        Connection c{mine[static_cast<std::size_t>(peer)], {}, peer};
        std::memcpy(&c.remote, theirs.data() + at, sizeof(sockaddr_storage));
        connections.push_back(c);
    }
    return connections;
}

std::string where(const std::string& name, int rank, int size) {
    return "[Communicator::create] comm '" + name + "' rank " + std::to_string(rank) + "/" + std::to_string(size);
}

// Where this rank listens when the options name neither an interface nor a
// host: KEEL_COMM_INTERFACE, else GLOO_SOCKET_IFNAME (its first name, as
// c10d's Gloo reads a list), else none (127.0.0.1).
std::string chosen_interface(const CommOptions& options) {
    if (!options.interface.empty() || !options.hostname.empty()) return options.interface;
    if (const auto v = env::text(env::Var::comm_interface)) return std::string(*v);
    if (const auto v = env::foreign("GLOO_SOCKET_IFNAME"); v && !v->empty())
        return std::string(v->substr(0, v->find(',')));
    return {};
}

std::string interface_source(const CommOptions& options) {
    if (!options.interface.empty() || !options.hostname.empty()) return " (CommOptions::interface)";
    if (env::text(env::Var::comm_interface)) return " (KEEL_COMM_INTERFACE)";
    return " (GLOO_SOCKET_IFNAME)";
}

std::string left_by_ended_job(const std::string& key, std::span<const std::byte> value) {
    return "key '" + key + "' in the store was left by " + owner_of(value) +
           ", which has ended (a job that stopped before its communicator ended: killed, or crashed): give this job its own id "
           "(KEEL_COMM_JOB_ID or TORCHELASTIC_RUN_ID; keel-launch makes one per run) or clear the store";
}

// The key rank 0 sets once every rank is connected, and holds while its
// communicator lives: a process that claims a rank after the ranks met (its
// claim was released by a communicator that went) is told that the job's
// communicator completed without it, instead of waiting for peers that
// will never arrive again.
std::string completed_key(const std::string& name) { return name + "/completed"; }

// FAILED_PRECONDITION when the communicator `name` already completed (the
// key above is set), else nothing. A short look: the key is there or not.
std::optional<Error> completed_without_us(const Store& store, const std::string& name, int rank, int size,
                                          const std::string& here) {
    const std::string key = completed_key(name);
    // 1 ms, not 0: a framework's store may read a zero timeout as "forever".
    Result<std::vector<std::byte>> done = store.get(key, std::chrono::milliseconds(1));
    if (!done.ok()) return std::nullopt;
    if (owner_ended(*done)) return Error(KEEL_STATUS_FAILED_PRECONDITION, here + ": " + left_by_ended_job(key, *done));
    const std::string who = owner_of(*done);
    return Error(KEEL_STATUS_FAILED_PRECONDITION,
                 here + ": the job's communicator '" + name + "' already completed: its " + std::to_string(size) +
                     " ranks met" + (who.empty() ? "" : " (rank 0 is " + who + ")") + " without this process, and rank " +
                     std::to_string(rank) +
                     "'s process has released its claim (its job finished or is finishing): this process came too "
                     "late; give a new run its own job id (KEEL_COMM_JOB_ID or TORCHELASTIC_RUN_ID; keel-launch makes "
                     "one per run)");
}

}  // namespace

Result<Connected> connect(const Store& shared_store, const std::string& name, int rank, int size,
                          const CommOptions& options) {
    const std::string here = where(name, rank, size);
    // From the first store call on (a Redis store writes to a socket): a
    // write to a server or peer that went fails with EPIPE instead of
    // killing the process. Gloo's device thread inherits this thread's
    // signal mask, so it keeps SIGPIPE blocked for good. Restored before
    // returning.
    const SigpipeBlocked blocked;
    const std::string interface = chosen_interface(options);
    // Checked here, before any key is written: Gloo's own lookup of an
    // unknown interface throws without freeing its interface list.
    if (!interface.empty() && ::if_nametoindex(interface.c_str()) == 0)
        return Error(KEEL_STATUS_INVALID_ARGUMENT, here + ": no network interface named '" + interface +
                                                       "' on this host" + interface_source(options));
    // Every key this rank writes is recorded and erased once all ranks are
    // connected (or meeting failed): a store serves job after job.
    WrittenKeys written(shared_store);
    const Store& store = written.store();
    // The claim: a tag naming this process under the rank's key. A store
    // that writes keys once (keel's) refuses a second claim at once; with
    // others the read-back after everyone arrived catches the later writer.
    const std::string tag = owner_tag();
    const std::string claim_key = name + "/claim/" + std::to_string(rank);
    if (Result<void> r = store.set(claim_key, bytes_of(tag)); !r.ok()) {
        if (r.error().code() != KEEL_STATUS_FAILED_PRECONDITION)
            return Error(r.error().code(), here + ": the store cannot be reached: " + r.error().message());
        Result<std::vector<std::byte>> holder = shared_store.get(claim_key, std::chrono::milliseconds(100));
        if (holder.ok() && owner_ended(*holder)) {
            // The peers wait for this rank's arrival: that key names the
            // ended process too, so they fail at once, saying so, instead of
            // at their timeout (a job killed after its ranks met left only
            // its claims).
            (void)shared_store.set(name + "/arrived/" + std::to_string(rank), *holder);
            return Error(KEEL_STATUS_FAILED_PRECONDITION, here + ": " + left_by_ended_job(claim_key, *holder));
        }
        const std::string who = holder.ok() ? owner_of(*holder) : std::string();
        const bool completed = shared_store.get(completed_key(name), std::chrono::milliseconds(1)).ok();
        return Error(KEEL_STATUS_FAILED_PRECONDITION,
                     here + ": another process" + (who.empty() ? "" : " (" + who + ")") + " already claimed rank " +
                         std::to_string(rank) + (completed ? ", and the job's communicator already completed with it" : "") +
                         " (" + r.error().message() + ")");
    }
    // The claim went through: the rank is free, either because the job is
    // meeting now or because its communicator completed and this rank's
    // process let it go.
    if (std::optional<Error> late = completed_without_us(shared_store, name, rank, size, here)) return *late;
    FailureNotice::clear_stale(shared_store, name, size);
    KEEL_TRY(store.set(name + "/arrived/" + std::to_string(rank), bytes_of(tag)));
    for (int peer = 0; peer < size; ++peer) {
        const std::string key = name + "/arrived/" + std::to_string(peer);
        const auto began = std::chrono::steady_clock::now();
        Result<std::vector<std::byte>> arrived = store.get(key, options.timeout);
        const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - began);
        // Rank 0 may have set the key above after this process looked.
        if (!arrived.ok()) {
            if (std::optional<Error> late = completed_without_us(shared_store, name, rank, size, here)) return *late;
        }
        // A get that fails well before its timeout is the store failing (a
        // server or the TCP store's host gone), not a rank that is late.
        if (!arrived.ok() && waited < options.timeout * 9 / 10)
            return Error(KEEL_STATUS_UNAVAILABLE, here + ": the store failed after " + std::to_string(waited.count()) +
                                                      " ms while this rank waited for rank " + std::to_string(peer) +
                                                      " to arrive (timeout " + std::to_string(options.timeout.count()) +
                                                      " ms): " + arrived.error().message());
        if (!arrived.ok())
            return Error(KEEL_STATUS_UNAVAILABLE, here + ": rank " + std::to_string(peer) + " did not arrive within " +
                                                      std::to_string(options.timeout.count()) +
                                                      " ms (" + arrived.error().message() + ")");
        if (owner_ended(*arrived))
            return Error(KEEL_STATUS_FAILED_PRECONDITION, here + ": " + left_by_ended_job(key, *arrived));
    }
    KEEL_TRY_ASSIGN(std::vector<std::byte> claimed, store.get(claim_key, options.timeout));
    if (claimed.size() != tag.size() || std::memcmp(claimed.data(), tag.data(), tag.size()) != 0) {
        // The key now holds the other claimant's tag: erasing it would
        // take the claim from under the process that won it.
        written.keep();
        return Error(KEEL_STATUS_FAILED_PRECONDITION,
                     here + ": another process (" + owner_of(claimed) + ") claimed rank " + std::to_string(rank) +
                         " too");
    }

    gloo::transport::tcp::attr attr;
    if (!interface.empty())
        attr.iface = interface;
    else
        attr.hostname = options.hostname.empty() ? "127.0.0.1" : options.hostname;
    try {
        auto device = gloo::transport::tcp::CreateDevice(attr);
        auto context = std::make_shared<gloo::rendezvous::Context>(rank, size);
        context->setTimeout(options.timeout);
        GlooStore gloo_store(store, name + "/gloo/", options.timeout);
        context->connectFullMesh(gloo_store, device);
        Result<std::vector<Connection>> connections = pair_connections(store, name, *context, options.timeout);
        if (!connections.ok())
            return Error(KEEL_STATUS_UNAVAILABLE,
                         here + ": exchanging the connections' ends: " + connections.error().message());
        // Past this barrier every rank has read every key it needs: each
        // erases its own.
        gloo::BarrierOptions barrier(context);
        barrier.setTimeout(options.timeout);
        gloo::barrier(barrier);
        written.hold(claim_key);
        std::vector<std::string> held{claim_key};
        // Best effort (it only improves a late process's error); held, and
        // erased when the communicator goes, only where this rank set it.
        if (rank == 0 && store.set(completed_key(name), bytes_of(tag)).ok()) {
            written.hold(completed_key(name));
            held.push_back(completed_key(name));
        }
        return Connected{std::move(context), SocketSet::with_connections(*connections), std::move(held)};
    } catch (const std::exception& e) {
        return Error(KEEL_STATUS_UNAVAILABLE, here + ": connecting the peers failed: " + e.what());
    }
}

}  // namespace keel::comm
