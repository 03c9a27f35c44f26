// The owner of objects that any thread creates and destroys at a high rate
// (events): the device must own each one between create and destroy, so that
// plugin_shutdown can report and release what the caller leaked, but one map
// behind one lock made every creating thread wait for the others and write
// the same cache lines. Here each thread adds to a shard of its own (a lock
// and a vector on their own cache line), so threads that create and destroy
// their own objects share nothing; an object destroyed on another thread
// goes back to the shard it was added to.
//
// Thread-safety: every member may be called from any thread. An object's
// `slot` is written under its shard's lock; `slot.shard` never changes after
// add() returns, so remove() may read it first.
#pragma once

#include <keel/base/spin_lock.hpp>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

namespace keel::cpu {

// Where an owned object is: kept in the object (T::slot), so that a removal
// finds it without a search.
struct OwnerSlot {
    std::uint32_t shard = 0;
    std::size_t index = 0;
};

// T has a member `OwnerSlot slot`, left to this class.
template <class T>
class ShardedOwners {
public:
    static constexpr std::uint32_t kShards = 16;

    ShardedOwners() = default;
    ShardedOwners(const ShardedOwners&) = delete;
    ShardedOwners& operator=(const ShardedOwners&) = delete;
    ShardedOwners(ShardedOwners&&) = delete;
    ShardedOwners& operator=(ShardedOwners&&) = delete;
    ~ShardedOwners() = default;

    // Takes `object` over, in the calling thread's shard. Throws
    // std::bad_alloc (the object is then destroyed).
    T* add(std::unique_ptr<T> object) {
        T* raw = object.get();
        const std::uint32_t s = this_thread_shard();
        Shard& shard = shards_[s];
        std::lock_guard lock(shard.mu);
        raw->slot = OwnerSlot{s, shard.owned.size()};
        shard.owned.push_back(std::move(object));
        return raw;
    }

    // Gives `object` back to the caller (to destroy it outside the lock);
    // null when it is not owned here (already removed, or another owner's).
    std::unique_ptr<T> remove(T* object) noexcept {
        const std::uint32_t s = object->slot.shard;
        if (s >= kShards) return nullptr;
        Shard& shard = shards_[s];
        std::lock_guard lock(shard.mu);
        const std::size_t i = object->slot.index;
        if (i >= shard.owned.size() || shard.owned[i].get() != object) return nullptr;
        std::unique_ptr<T> out = std::move(shard.owned[i]);
        if (i + 1 != shard.owned.size()) {
            shard.owned[i] = std::move(shard.owned.back());
            shard.owned[i]->slot.index = i;
        }
        shard.owned.pop_back();
        return out;
    }

    // Every object still owned, taken out of every shard.
    [[nodiscard]] std::vector<std::unique_ptr<T>> take_all() {
        std::vector<std::unique_ptr<T>> all;
        for (Shard& shard : shards_) {
            std::vector<std::unique_ptr<T>> owned;
            {
                std::lock_guard lock(shard.mu);
                owned.swap(shard.owned);
            }
            for (auto& object : owned) all.push_back(std::move(object));
        }
        return all;
    }

private:
    // A spin lock, not a std::mutex: a shard's section is a few
    // instructions and almost never contended (a thread has its shard to
    // itself); the mutex's lock and unlock cost a fifth of an event's create
    // and destroy through keel.
    struct alignas(64) Shard {
        keel::base::SpinLock mu;
        std::vector<std::unique_ptr<T>> owned;  // guarded by mu
    };

    // Threads take shards in turn at their first call: with no more threads
    // than shards, no two share one.
    static std::uint32_t this_thread_shard() noexcept {
        static std::atomic<std::uint32_t> next{0};
        thread_local const std::uint32_t mine = next.fetch_add(1, std::memory_order_relaxed) % kShards;
        return mine;
    }

    std::array<Shard, kShards> shards_;
};

}  // namespace keel::cpu
