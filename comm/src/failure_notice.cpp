#include "failure_notice.hpp"

#include "bounded_call.hpp"

#include <atomic>
#include <memory>

namespace keel::comm {
namespace {

std::string failure_key(const std::string& name) { return name + "/failed"; }

// 1 ms, not 0: a framework's store may read a zero timeout as "forever".
constexpr std::chrono::milliseconds kLook{1};

}  // namespace

FailureNotice::FailureNotice(Store store, const std::string& name, int rank, int size)
    : store_(std::move(store)), key_(failure_key(name)), rank_(rank), size_(size) {}

FailureNotice::~FailureNotice() {
    if (!posted_) return;
    (void)run_bounded([store = store_, key = key_] { (void)store.erase(key); }, std::chrono::milliseconds(500));
}

void FailureNotice::clear_stale(const Store& store, const std::string& name, int size) {
    if (size > 1) (void)store.erase(failure_key(name));
}

void FailureNotice::post(const std::string& message, std::chrono::milliseconds bound, bool mismatch) noexcept {
    if (size_ < 2) return;
    try {
        auto value = std::make_shared<std::string>("rank " + std::to_string(rank_) + (mismatch ? " (mismatch)" : "") +
                                                   ": " + message);
        auto set = std::make_shared<bool>(false);
        const bool finished = run_bounded(
            [store = store_, key = key_, value, set] {
                *set = store.set(key, std::as_bytes(std::span(value->data(), value->size()))).ok();
            },
            bound);
        // Erased at destroy only where this rank's value is the one there.
        posted_ = finished && *set;
    } catch (...) {
        // No memory for the message: the peers name what they saw.
    }
}

std::optional<PeerFailure> FailureNotice::read(std::chrono::milliseconds bound) const noexcept {
    if (size_ < 2) return std::nullopt;
    // One read at a time: a store that never answers holds one thread, not
    // one per look (the native watcher looks again and again).
    if (reading_->exchange(true)) return std::nullopt;
    // Clears the flag when the read's call goes: after it ran, or unrun
    // when no thread could be made.
    struct Done {
        explicit Done(std::shared_ptr<std::atomic<bool>> flag) : reading(std::move(flag)) {}
        Done(const Done&) = delete;
        Done& operator=(const Done&) = delete;
        ~Done() { reading->store(false); }
        std::shared_ptr<std::atomic<bool>> reading;
    };
    std::shared_ptr<Done> done;
    try {
        done = std::make_shared<Done>(reading_);
    } catch (...) {
        reading_->store(false);
        return std::nullopt;
    }
    try {
        auto value = std::make_shared<std::optional<std::string>>();
        const bool finished = run_bounded(
            [store = store_, key = key_, value, done] {
                Result<std::vector<std::byte>> got = store.get(key, kLook);
                if (got.ok()) *value = std::string(reinterpret_cast<const char*>(got->data()), got->size());
            },
            bound);
        if (!finished || !*value) return std::nullopt;
        // "rank R: <error>" or "rank R (mismatch): <error>"
        const std::string& v = **value;
        const std::size_t colon = v.find(": ");
        if (v.rfind("rank ", 0) != 0 || colon == std::string::npos) return std::nullopt;
        PeerFailure failure;
        try {
            failure.rank = std::stoi(v.substr(5, colon - 5));
        } catch (...) {
            return std::nullopt;
        }
        // Another rank of this group, or it is not a notice of this group.
        if (failure.rank == rank_ || failure.rank < 0 || failure.rank >= size_) return std::nullopt;
        failure.error = v.substr(colon + 2);
        failure.mismatch = v.compare(0, colon, "rank " + std::to_string(failure.rank) + " (mismatch)") == 0;
        return failure;
    } catch (...) {
        return std::nullopt;
    }
}

std::string FailureNotice::text(const PeerFailure& failure) {
    return "rank " + std::to_string(failure.rank) + " failed the communicator: " + failure.error;
}

}  // namespace keel::comm
