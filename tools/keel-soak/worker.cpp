#include "worker.hpp"

#include "faults.hpp"

#include <cstdio>
#include <cstring>

#include <unistd.h>

namespace soak {

namespace {

// Values a step writes: a function of a seed, so a read-back can be checked.
std::vector<std::uint32_t> pattern(std::uint32_t seed, std::size_t n) {
    std::vector<std::uint32_t> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = seed * 2654435761u + static_cast<std::uint32_t>(i);
    return v;
}

}  // namespace

const char* step_name(Step step) {
    switch (step) {
        case Step::upload: return "upload + read-back";
        case Step::hand_off: return "hand-off to the shared stream";
        case Step::pinned_round_trip: return "pinned round trip";
        case Step::memset: return "memset + read-back";
        case Step::hold_and_move_in: return "moved-in upload + hold";
    }
    return "?";
}

void Worker::run(std::chrono::steady_clock::time_point until) {
    while (std::chrono::steady_clock::now() < until) {
        if (faults_) maybe_inject(rng_);
        if (churn_ && rng_() % 3 == 0) {
            if (!churn()) {
                fail();
                stream_.reset();
                counters_.streams_replaced.fetch_add(1, std::memory_order_relaxed);
            }
            counters_.steps.fetch_add(1, std::memory_order_relaxed);
            continue;
        }
        (void)step(static_cast<Step>(rng_() % kSteps));
    }
    survivors_.clear();
    long_lived_.clear();
    stream_.reset();
}

bool Worker::churn() {
    constexpr std::size_t kKept = 16;  // short-lived survivors per worker at most
    constexpr std::size_t kLongLived = 48;
    {
        auto side = keel::Stream::create(device_);
        if (!ok(side)) return false;
        std::vector<Survivor> made;
        const int n = 2 + static_cast<int>(rng_() % 7);
        for (int i = 0; i < n; ++i) {
            // 16 KiB to 528 KiB: well under a segment, several to one.
            const std::size_t elements = 4096 + rng_() % (128 * 1024);
            std::vector<std::uint32_t> want = pattern(static_cast<std::uint32_t>(rng_()), elements);
            auto buf = keel::Buffer::allocate(*side, elements * 4);
            if (!ok(buf) || !ok(side->copy(*buf, want))) return false;
            made.push_back(Survivor{std::move(*buf), std::move(want)});
        }
        // Filled, or failed: a buffer of a failed stream is not kept.
        if (!ok(side->synchronize())) return false;
        const int keep = 1 + static_cast<int>(rng_() % 2);
        for (int k = 0; k < keep; ++k) {
            Survivor& kept = made[rng_() % made.size()];
            if (rng_() % 4 != 0) {
                survivors_.push_back(std::move(kept));
            } else if (long_lived_.size() < kLongLived) {
                long_lived_.push_back(std::move(kept));
            } else {
                Survivor& replaced = long_lived_[rng_() % long_lived_.size()];
                Survivor gone = std::move(replaced);
                replaced = std::move(kept);
                if (!check_and_drop(std::move(gone))) return false;
            }
        }
        // The rest is dropped here, then the side stream closes.
    }
    counters_.streams_churned.fetch_add(1, std::memory_order_relaxed);
    while (survivors_.size() > kKept)
        if (!check_oldest_survivor()) return false;
    return rng_() % 2 == 0 || survivors_.empty() || check_oldest_survivor();
}

bool Worker::check_oldest_survivor() {
    Survivor survivor = std::move(survivors_.front());
    survivors_.pop_front();
    return check_and_drop(std::move(survivor));
}

bool Worker::check_and_drop(Survivor survivor) {
    if (survivor.buffer.empty()) return true;  // moved from twice (picked twice above)
    if (!stream_) {
        auto s = keel::Stream::create(device_);
        if (!ok(s)) return false;
        stream_.emplace(std::move(*s));
    }
    return read_back(*stream_, survivor.buffer, survivor.want);
}

bool Worker::step(Step step) {
    if (!stream_) {
        auto s = keel::Stream::create(device_);
        if (!ok(s)) {
            fail();
            counters_.steps.fetch_add(1, std::memory_order_relaxed);
            return false;
        }
        stream_.emplace(std::move(*s));
    }
    bool done = false;
    switch (step) {
        case Step::upload: done = upload_and_read_back(); break;
        case Step::hand_off: done = hand_off(); break;
        case Step::pinned_round_trip: done = pinned_round_trip(); break;
        case Step::memset: done = memset_and_read_back(); break;
        case Step::hold_and_move_in: done = hold_and_move_in(); break;
    }
    if (!done) {
        fail();
        stream_.reset();  // a failed stream is dropped and replaced
        counters_.streams_replaced.fetch_add(1, std::memory_order_relaxed);
    }
    counters_.steps.fetch_add(1, std::memory_order_relaxed);
    return done;
}

void Worker::check(const std::vector<std::uint32_t>& got, const std::vector<std::uint32_t>& want) {
    if (got.size() != want.size()) {
        counters_.mismatches.fetch_add(1, std::memory_order_relaxed);
        return;
    }
    for (std::size_t i = 0; i < got.size(); ++i)
        if (got[i] != want[i]) {
            counters_.mismatches.fetch_add(1, std::memory_order_relaxed);
            std::fprintf(stderr, "mismatch at %zu of %zu: %u, wanted %u\n", i, got.size(), got[i], want[i]);
            return;
        }
}

// Reads `buf` back into a vector (pageable, unstaged) and checks it.
bool Worker::read_back(const keel::Stream& s, const keel::Buffer& buf, const std::vector<std::uint32_t>& want) {
    auto view = buf.view(0, want.size() * 4);
    if (!ok(view)) return false;
    auto future = s.copy_to_vector<std::uint32_t>(*view);
    if (!ok(future)) return false;
    auto got = std::move(*future).get();
    if (!ok(got)) return false;
    check(*got, want);
    return true;
}

bool Worker::upload_and_read_back() {
    const std::vector<std::uint32_t> want = pattern(static_cast<std::uint32_t>(rng_()), elements());
    auto buf = keel::Buffer::allocate(*stream_, want.size() * 4);
    if (!ok(buf) || !ok(stream_->copy(*buf, want))) return false;  // staged from a container
    return read_back(*stream_, *buf, want);
}

bool Worker::memset_and_read_back() {
    const std::size_t n = elements();
    auto buf = keel::Buffer::allocate(*stream_, n * 4);
    if (!ok(buf) || !ok(stream_->memset(*buf, 0x5a))) return false;
    return read_back(*stream_, *buf, std::vector<std::uint32_t>(n, 0x5a5a5a5au));
}

// Produced on this thread's stream, consumed on the shared one after an
// event: the consumer's copy and read-back must see the producer's data.
bool Worker::hand_off() {
    const std::vector<std::uint32_t> want = pattern(static_cast<std::uint32_t>(rng_()), elements());
    auto src = keel::Buffer::allocate(*stream_, want.size() * 4);
    if (!ok(src) || !ok(stream_->copy(*src, want))) return false;
    auto event = keel::Event::create(device_);
    if (!ok(event) || !ok(event->record(*stream_))) return false;
    std::lock_guard lock(shared_mu_);
    if (!shared_) {
        auto s = keel::Stream::create(device_);
        if (!ok(s)) return false;
        shared_.emplace(std::move(*s));
    }
    const keel::Stream& shared = *shared_;
    auto dst = keel::Buffer::allocate(shared, want.size() * 4);
    const bool done = ok(dst) && ok(shared.wait(*event)) && ok(src->record_stream(shared)) &&
                      ok(shared.copy(*dst, *src)) && read_back(shared, *dst, want);
    if (!done) {
        // The shared stream may be the one that failed: replace it too.
        shared_.reset();
    }
    return done;
}

bool Worker::pinned_round_trip() {
    const std::vector<std::uint32_t> want = pattern(static_cast<std::uint32_t>(rng_()), elements());
    const std::uint64_t bytes = want.size() * 4;
    auto in = keel::PinnedBuffer::allocate(device_, bytes);
    auto out = keel::PinnedBuffer::allocate(device_, bytes);
    if (!ok(in) || !ok(out)) return false;
    std::memcpy(in->data(), want.data(), bytes);
    auto buf = keel::Buffer::allocate(*stream_, bytes);
    if (!ok(buf) || !ok(stream_->copy(*buf, *in)) || !ok(stream_->copy(*out, *buf))) return false;
    // The pinned buffers stay alive until the stream is done with them.
    if (!ok(stream_->synchronize())) return false;
    std::vector<std::uint32_t> got(want.size());
    std::memcpy(got.data(), out->data(), bytes);
    check(got, want);
    return true;
}

// A vector moved in, the buffer handed to a hold, a later read of a copy.
bool Worker::hold_and_move_in() {
    std::vector<std::uint32_t> want = pattern(static_cast<std::uint32_t>(rng_()), elements());
    std::vector<std::uint32_t> moved = want;
    auto a = keel::Buffer::allocate(*stream_, want.size() * 4);
    auto b = keel::Buffer::allocate(*stream_, want.size() * 4);
    if (!ok(a) || !ok(b)) return false;
    if (!ok(stream_->copy(*a, std::move(moved))) || !ok(stream_->copy(*b, *a))) return false;
    if (!ok(stream_->hold(std::move(*a)))) return false;
    return read_back(*stream_, *b, want);
}

}  // namespace soak
