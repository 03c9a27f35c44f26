#include "nccl_comm.hpp"

#include "cuda_error.hpp"

#include <algorithm>
#include <cstring>
#include <memory>
#include <set>
#include <thread>

namespace keel::cuda {
namespace {

constexpr auto kWatchPeriod = std::chrono::milliseconds(20);
// How often a non-blocking NCCL call still in progress is polled.
constexpr auto kPollPeriod = std::chrono::microseconds(200);

// Polls a non-blocking communicator's state while it is kNcclInProgress,
// up to `deadline`; kNcclInProgress if the deadline passed.
template <class Aborted>
NcclResult poll_ready(NcclComm comm, NcclResult state,
                      std::chrono::steady_clock::time_point deadline, Aborted&& aborted) {
    while (state == kNcclInProgress) {
        if (std::chrono::steady_clock::now() >= deadline) return kNcclInProgress;
        std::this_thread::sleep_for(kPollPeriod);
        NcclResult async = kNcclSuccess;
        if (aborted(comm, async)) return kNcclInternalError;
        state = async;
    }
    return state;
}

// This rank's word in the agreement: "1 <gpu uuid>" when NCCL loaded, else
// "0 <why>".
std::string agreement_word(const Device& device, const Result<const NcclLibrary*>& nccl) {
    if (!nccl.ok()) return "0 " + nccl.error().message();
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, device.ordinal()) != cudaSuccess) return "0 cudaGetDeviceProperties failed";
    static constexpr char kHex[] = "0123456789abcdef";
    std::string word = "1 ";
    for (unsigned char byte : prop.uuid.bytes) {
        word += kHex[byte >> 4];
        word += kHex[byte & 15];
    }
    return word;
}

// Every rank reads every rank's word: all decide alike.
Result<void> agree(const plugin::CommConfig& config, const std::string& mine) {
    KEEL_TRY(config.set("nccl/agree/" + std::to_string(config.rank), mine));
    std::set<std::string> gpus;
    std::optional<Error> declined;
    for (int peer = 0; peer < config.size; ++peer) {
        KEEL_TRY_ASSIGN(const std::string word, config.get("nccl/agree/" + std::to_string(peer)));
        if (declined) continue;
        if (word.rfind("1 ", 0) != 0) {
            declined = Error(KEEL_STATUS_UNIMPLEMENTED, config.where() + ": rank " + std::to_string(peer) +
                                                            " cannot use NCCL: " + word.substr(std::min<std::size_t>(2, word.size())));
        } else if (!gpus.insert(word.substr(2)).second) {
            declined = Error(KEEL_STATUS_UNIMPLEMENTED,
                             config.where() + ": two ranks share one GPU (rank " + std::to_string(peer) +
                                 "'s); NCCL needs a GPU per rank");
        }
    }
    if (declined) return *declined;
    return ok();
}

}  // namespace

Result<std::unique_ptr<NcclCommunicator>> NcclCommunicator::create(Device& device, const plugin::CommConfig& config) {
    const Result<const NcclLibrary*> loaded = NcclLibrary::get();
    KEEL_TRY(agree(config, agreement_word(device, loaded)));
    const NcclLibrary& nccl = **loaded;
    NcclUniqueId id{};
    if (config.rank == 0) {
        const NcclResult made = nccl.GetUniqueId(&id);
        if (made != kNcclSuccess)
            return Error(KEEL_STATUS_UNAVAILABLE, config.where() + ": ncclGetUniqueId failed: " + nccl.describe(made));
        KEEL_TRY(config.set("nccl/id", std::string_view(id.internal, sizeof id.internal)));
    } else {
        KEEL_TRY_ASSIGN(const std::string bytes, config.get("nccl/id"));
        if (bytes.size() != sizeof id.internal)
            return Error(KEEL_STATUS_FAILED_PRECONDITION, config.where() + ": the store's NCCL id has " +
                                                              std::to_string(bytes.size()) + " bytes, not 128");
        std::memcpy(id.internal, bytes.data(), sizeof id.internal);
    }
    KEEL_TRY(device.make_current());
    NcclComm comm = nullptr;
    const std::string call = nccl.CommInitRankConfig ? "ncclCommInitRankConfig" : "ncclCommInitRank";
    NcclResult joined = kNcclSuccess;
    if (nccl.CommInitRankConfig) {
        // Non-blocking: a rank that never calls, or a peer that cannot be
        // reached, ends in the timeout instead of a hang.
        NcclConfig nonblocking;
        nonblocking.blocking = 0;
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(config.timeout_ms);
        joined = nccl.CommInitRankConfig(&comm, config.size, id, config.rank, &nonblocking);
        if (comm != nullptr)
            joined = poll_ready(comm, joined, deadline, [&](NcclComm c, NcclResult& state) {
                if (nccl.CommGetAsyncError(c, &state) != kNcclSuccess) state = kNcclInternalError;
                return false;
            });
        if (joined == kNcclInProgress) {
            (void)nccl.CommAbort(comm);
            return Error(KEEL_STATUS_UNAVAILABLE,
                         config.where() + ": " + call + " (NCCL " + nccl.version_text() + ") did not complete within " +
                             std::to_string(config.timeout_ms) + " ms (a rank never joined, or a peer cannot be reached)");
        }
        if (joined != kNcclSuccess && comm != nullptr) (void)nccl.CommAbort(comm);
    } else {
        joined = nccl.CommInitRank(&comm, config.size, id, config.rank);
    }
    if (joined != kNcclSuccess)
        return Error(KEEL_STATUS_UNAVAILABLE,
                     config.where() + ": " + call + " (NCCL " + nccl.version_text() + ") failed: " +
                         nccl.describe(joined));
    std::unique_ptr<NcclCommunicator> made(new NcclCommunicator(device, nccl, config, comm));
    made->watchdog_ = std::thread([raw = made.get()] { raw->watch(); });
    return made;
}

NcclCommunicator::NcclCommunicator(Device& device, const NcclLibrary& nccl, plugin::CommConfig config, NcclComm comm)
    : device_(device), nccl_(nccl), config_(std::move(config)), comm_(comm) {}

NcclCommunicator::~NcclCommunicator() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    cv_.notify_all();
    if (watchdog_.joinable()) watchdog_.join();
    (void)device_.ensure_context();
    for (Pending& p : pending_) {
        (void)cudaEventDestroy(p.reached);
        (void)cudaEventDestroy(p.done);
    }
    if (!aborted_) (void)nccl_.CommDestroy(comm_);
}

Result<void> NcclCommunicator::error() const {
    std::lock_guard lock(mutex_);
    if (error_) return *error_;
    return ok();
}

void NcclCommunicator::fail(Status code, const std::string& message) noexcept {
    try {
        std::lock_guard lock(mutex_);
        if (!error_) error_ = Error(code, message);
        // Every operation not seen complete fails its stream at its point
        // (the abort that follows ends its kernels, whatever they did).
        for (const Pending& p : pending_) {
            const bool named = message.rfind(p.what, 0) == 0;
            p.stream_failure->fail(Error(code, "[cuda comm] " + (named ? message
                                                                       : p.what + ": not completed, the "
                                                                                  "communicator failed: " +
                                                                             message)),
                                   p.point);
        }
    } catch (...) {
        // No memory for the message: the abort below still ends NCCL's work.
    }
    cv_.notify_all();
}

Result<void> NcclCommunicator::prepare(Stream& stream, const std::string& what) {
    KEEL_TRY(error());
    KEEL_TRY(stream.host_failure().check());
    if (&stream.device() != &device_)
        return Error(KEEL_STATUS_INVALID_ARGUMENT, what + " on " + config_.where() + ": the stream is on " +
                                                       stream.device().label() + ", the communicator on " +
                                                       device_.label());
    return device_.ensure_context();
}

NcclResult NcclCommunicator::settle(NcclResult issued) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(config_.timeout_ms);
    return poll_ready(comm_, issued, deadline, [&](NcclComm c, NcclResult& state) {
        // Under mutex_, as the watchdog's: abort_nccl() never frees the
        // communicator under this call.
        std::lock_guard lock(mutex_);
        if (aborted_) return true;  // abort() set the error first
        if (nccl_.CommGetAsyncError(c, &state) != kNcclSuccess) state = kNcclInternalError;
        return false;
    });
}

Result<cudaEvent_t> NcclCommunicator::mark(Stream& stream, const std::string& what) {
    const std::string where = what + " on " + config_.where();
    cudaEvent_t event = nullptr;
    KEEL_TRY(check_cuda(cudaEventCreateWithFlags(&event, cudaEventDisableTiming), where + ": cudaEventCreate"));
    if (cudaError_t recorded = cudaEventRecord(event, stream.cuda()); recorded != cudaSuccess) {
        (void)cudaEventDestroy(event);
        return cuda_error(recorded, where + ": cudaEventRecord");
    }
    return event;
}

Result<void> NcclCommunicator::finish(Stream& stream, const std::string& what, NcclResult issued,
                                      std::uint64_t point, cudaEvent_t reached) {
    // RAII-managed cudaEvent_t, owned here until the watchdog has it: every
    // early return frees it.
    std::unique_ptr<CUevent_st, cudaError_t (*)(cudaEvent_t)> reached_owner(reached, &cudaEventDestroy);
    const std::string where = what + " on " + config_.where();
    if (issued == kNcclInProgress) {
        issued = settle(issued);
        // Aborted meanwhile (the poll stopped): the communicator's error.
        if (issued != kNcclSuccess)
            if (Result<void> earlier = error(); !earlier.ok()) return earlier;
        if (issued == kNcclInProgress) {
            const std::string message = where + ": NCCL did not enqueue it within the timeout of " +
                                        std::to_string(config_.timeout_ms) +
                                        " ms (connecting to a peer that is dead, stuck or never enqueued it)";
            fail(KEEL_STATUS_UNAVAILABLE, message);
            abort_nccl();  // this thread holds enqueue_mutex_
            return Error(KEEL_STATUS_UNAVAILABLE, message);
        }
    }
    if (issued == kNcclInvalidArgument || issued == kNcclInvalidUsage)
        return Error(KEEL_STATUS_INVALID_ARGUMENT, where + ": NCCL refused it: " + nccl_.describe(issued));
    if (issued != kNcclSuccess) {
        const std::string message = where + ": NCCL failed: " + nccl_.describe(issued);
        fail(KEEL_STATUS_DEVICE_ERROR, message);
        abort_nccl();  // this thread holds enqueue_mutex_
        return Error(KEEL_STATUS_DEVICE_ERROR, message);
    }
    cudaEvent_t done = nullptr;
    KEEL_TRY(check_cuda(cudaEventCreateWithFlags(&done, cudaEventDisableTiming), where + ": cudaEventCreate"));
    if (cudaError_t recorded = cudaEventRecord(done, stream.cuda()); recorded != cudaSuccess) {
        (void)cudaEventDestroy(done);
        return cuda_error(recorded, where + ": cudaEventRecord");
    }
    stream.host_failure().arm();
    {
        std::lock_guard lock(mutex_);
        pending_.push_back({reached_owner.release(), done, where, std::nullopt, stream.host_failure_ptr(), point});
    }
    cv_.notify_all();
    return ok();
}

Result<void> NcclCommunicator::drain() {
    std::unique_lock lock(mutex_);
    cv_.wait(lock, [&] { return pending_.empty() || error_.has_value(); });
    if (error_) return *error_;
    return ok();
}

void NcclCommunicator::abort(const std::string& why) noexcept {
    fail(KEEL_STATUS_FAILED_PRECONDITION, why);
    // Not while another thread is inside an NCCL call on the communicator,
    // unless that call is stuck (connection set-up with a peer that never
    // comes): ncclCommAbort is what unblocks it.
    const bool quiet = enqueue_mutex_.try_lock_for(std::chrono::milliseconds(200));
    abort_nccl();
    if (quiet) enqueue_mutex_.unlock();
}

void NcclCommunicator::abort_nccl() noexcept {
    {
        std::lock_guard lock(mutex_);
        if (aborted_) return;
        aborted_ = true;
    }
    (void)nccl_.CommAbort(comm_);
    cv_.notify_all();
}

void NcclCommunicator::watch() {
    (void)device_.ensure_context();
    const auto timeout = std::chrono::milliseconds(config_.timeout_ms);
    std::unique_lock lock(mutex_);
    while (!stopping_) {
        cv_.wait_for(lock, kWatchPeriod);
        if (aborted_) {
            // NCCL's kernels have ended; what is left completes by itself.
            while (!pending_.empty() && cudaEventQuery(pending_.front().done) != cudaErrorNotReady) {
                (void)cudaEventDestroy(pending_.front().reached);
                (void)cudaEventDestroy(pending_.front().done);
                pending_.pop_front();
            }
            cv_.notify_all();
            continue;
        }
        std::string failure;
        Status code = KEEL_STATUS_DEVICE_ERROR;
        while (!pending_.empty()) {
            // Complete or not, one whose stream failed before it is judged below.
            if (!pending_.front().stream_failure->check_before(pending_.front().point).ok()) break;
            const cudaError_t state = cudaEventQuery(pending_.front().done);
            if (state == cudaErrorNotReady) break;
            if (state != cudaSuccess) {
                failure = pending_.front().what + ": " + describe_cuda(state);
                break;
            }
            (void)cudaEventDestroy(pending_.front().reached);
            (void)cudaEventDestroy(pending_.front().done);
            pending_.pop_front();
            cv_.notify_all();
        }
        // An operation whose stream failed at an earlier point (another
        // communicator's operation failed there, or a host function) runs,
        // or ran, on what the failure left in its input: CUDA does not skip
        // work queued behind it. Its peers must not take that for data, so
        // this communicator fails and aborts too (from this thread: never
        // from a CUDA callback, which is where a host function fails a
        // stream).
        if (failure.empty()) {
            for (const Pending& p : pending_) {
                Result<void> before = p.stream_failure->check_before(p.point);
                if (before.ok()) continue;
                failure = p.what + ": not run on its input: its stream failed before it (" + before.error().message() +
                          "); the communicator is aborted so its peers do not receive that";
                code = before.error().code();
                break;
            }
        }
        // The oldest operation's clock starts once its stream reached it
        // (keel.h: the timeout counts from there), not at its enqueue nor
        // when the one before it completed: compute queued before it on
        // its stream may take longer than the timeout.
        if (failure.empty() && !pending_.empty() && !pending_.front().since) {
            const cudaError_t state = cudaEventQuery(pending_.front().reached);
            if (state == cudaSuccess)
                pending_.front().since = std::chrono::steady_clock::now();
            else if (state != cudaErrorNotReady)
                failure = pending_.front().what + ": " + describe_cuda(state);
        }
        NcclResult async = kNcclSuccess;
        if (failure.empty() && nccl_.CommGetAsyncError(comm_, &async) == kNcclSuccess && async != kNcclSuccess &&
            async != kNcclInProgress)
            failure = (pending_.empty() ? config_.where() : pending_.front().what) +
                      ": NCCL reported an asynchronous error: " + nccl_.describe(async);
        if (failure.empty() && !pending_.empty() && pending_.front().since &&
            std::chrono::steady_clock::now() - *pending_.front().since > timeout) {
            failure = pending_.front().what + ": did not complete within the timeout of " +
                      std::to_string(config_.timeout_ms) + " ms (a peer is dead, stuck or never enqueued it)";
            code = KEEL_STATUS_UNAVAILABLE;
        }
        if (failure.empty()) continue;
        lock.unlock();
        fail(code, failure);
        abort(failure);
        lock.lock();
    }
}

}  // namespace keel::cuda
