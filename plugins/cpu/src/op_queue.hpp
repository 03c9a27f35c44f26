// The FIFO queue of one stream: many producers (any host thread), one
// consumer (the stream's worker).
//
// Why this design and not a library queue: a stream must run operations in
// the order their enqueue calls RETURN, even across host threads. Debian's
// moodycamel::ConcurrentQueue gives no FIFO order across producers (each
// producer has its own sub-queue), so it cannot hold a stream. A Vyukov
// lock-free MPSC list would keep order, but events and synchronize need
// each operation's exact position in that order, which a lock-free push
// cannot hand out atomically with the link. So producers serialise on a
// SpinLock held for a handful of instructions (take a recycled node, number
// it, link it): uncontended that is one atomic exchange and no system call,
// and the order in which producers take the lock IS the stream order. The
// consumer side takes no lock (Michael & Scott's two-lock queue, with one
// consumer): the worker follows `next` links from a dummy node.
//
// Nodes are recycled: the worker pushes finished nodes on a lock-free stack
// (single pusher), producers take the whole stack at once under the queue
// lock (so no ABA is possible), so the steady state allocates nothing.
#pragma once

#include "op.hpp"
#include "park.hpp"

#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

namespace keel::cpu {

class OpQueue {
public:
    OpQueue() {
        nodes_.push_back(std::make_unique<Op>());
        head_ = tail_ = nodes_.back().get();
    }
    OpQueue(const OpQueue&) = delete;
    OpQueue& operator=(const OpQueue&) = delete;
    OpQueue(OpQueue&&) = delete;
    OpQueue& operator=(OpQueue&&) = delete;

    // Producer side (any thread). `fill(Op&)` writes the op's fields; it runs
    // under the queue lock, so it must be short. Returns the op's position.
    // `prepare(Op&)` runs first and may throw (it gives the node storage
    // that the node keeps for later ops, so it allocates once per node at
    // most): the node then goes back unused and nothing is enqueued.
    template <class Fill>
    std::uint64_t push(Fill&& fill) {
        return push(std::forward<Fill>(fill), NoPrepare{});
    }
    template <class Fill, class Prepare>
    std::uint64_t push(Fill&& fill, Prepare&& prepare) {
        std::lock_guard<SpinLock> lock(lock_);
        Op* op = take_node();
        try {
            prepare(*op);
        } catch (...) {
            op->pool_next = free_;
            free_ = op;
            throw;
        }
        op->next.store(nullptr, std::memory_order_relaxed);
        op->position = ++last_position_;
        fill(*op);
        // seq_cst RMW: the worker's "park, then re-check" reads this link
        // (see Stream::idle_wait) and cannot miss it.
        tail_->next.exchange(op, std::memory_order_seq_cst);
        tail_ = op;
        enqueued_.store(last_position_, std::memory_order_release);
        return last_position_;
    }

    // Position of the last op enqueued so far (0 = none).
    [[nodiscard]] std::uint64_t enqueued() const noexcept {
        return enqueued_.load(std::memory_order_acquire);
    }

    // Consumer side (the worker only) -------------------------------------

    // The next op, or null when the queue is empty. The returned op stays
    // valid until the following pop.
    [[nodiscard]] Op* pop() noexcept {
        Op* next = head_->next.load(std::memory_order_acquire);
        if (next == nullptr) return nullptr;
        recycle(head_);
        head_ = next;  // `next` is the new dummy
        return next;
    }
    [[nodiscard]] bool has_work() const noexcept {
        return head_->next.load(std::memory_order_seq_cst) != nullptr;
    }

private:
    Op* take_node() {
        if (free_ == nullptr) free_ = returned_.exchange(nullptr, std::memory_order_acquire);
        if (free_ != nullptr) {
            Op* op = free_;
            free_ = op->pool_next;
            return op;
        }
        nodes_.push_back(std::make_unique<Op>());
        return nodes_.back().get();
    }

    void recycle(Op* op) noexcept {
        op->pool_next = returned_.load(std::memory_order_relaxed);
        while (!returned_.compare_exchange_weak(op->pool_next, op, std::memory_order_release,
                                                std::memory_order_relaxed)) {
        }
    }

    // Producer side, under lock_.
    SpinLock lock_;
    Op* tail_ = nullptr;
    Op* free_ = nullptr;
    std::uint64_t last_position_ = 0;
    std::vector<std::unique_ptr<Op>> nodes_;  // owns every node
    std::atomic<std::uint64_t> enqueued_{0};
    // Consumer side.
    alignas(64) Op* head_ = nullptr;
    alignas(64) std::atomic<Op*> returned_{nullptr};
};

}  // namespace keel::cpu
