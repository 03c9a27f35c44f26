// Events created and destroyed from many threads: the device's sharded owner
// of them (plugins/cpu/src/sharded_owners.hpp) on its own, then through the
// C table, where events made on one thread are destroyed on another while
// the owning threads record, wait on and query theirs. TSan runs these.
#include "cpu_test.hpp"

#include "sharded_owners.hpp"

#include <algorithm>
#include <set>

namespace keel::cpu::testing {
namespace {

struct Owned {
    explicit Owned(int v) : value(v) {}
    int value;
    OwnerSlot slot;
};

TEST(ShardedOwners, RemovesExactlyWhatItOwnsAndTakesTheRestAtTheEnd) {
    ShardedOwners<Owned> owners;
    Owned* a = owners.add(std::make_unique<Owned>(1));
    Owned* b = owners.add(std::make_unique<Owned>(2));
    Owned* c = owners.add(std::make_unique<Owned>(3));
    // Removing the first moves the last into its place: both stay findable.
    std::unique_ptr<Owned> got = owners.remove(a);
    ASSERT_EQ(got.get(), a);
    EXPECT_EQ(owners.remove(a), nullptr) << "a second removal finds nothing";
    Owned stranger(9);
    stranger.slot = OwnerSlot{c->slot.shard, c->slot.index};
    EXPECT_EQ(owners.remove(&stranger), nullptr) << "an object of another owner at an owned slot";
    stranger.slot = OwnerSlot{ShardedOwners<Owned>::kShards, 0};
    EXPECT_EQ(owners.remove(&stranger), nullptr) << "a shard out of range";
    EXPECT_EQ(owners.remove(c).get(), c);
    std::vector<std::unique_ptr<Owned>> rest = owners.take_all();
    ASSERT_EQ(rest.size(), 1u);
    EXPECT_EQ(rest[0].get(), b);
    EXPECT_TRUE(owners.take_all().empty());
}

TEST(ShardedOwners, ThreadsAddAndRemoveTheirOwnAndEachOthers) {
    constexpr int kThreads = 4, kRounds = 2000;
    ShardedOwners<Owned> owners;
    // Each thread removes half of what it added, and hands the other half to
    // the next thread, which removes it from the shard it was added to.
    std::vector<std::vector<Owned*>> handed(kThreads);
    std::vector<std::mutex> handed_mu(kThreads);
    std::atomic<int> wrong{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&, t] {
            for (int i = 0; i < kRounds; ++i) {
                Owned* mine = owners.add(std::make_unique<Owned>(t));
                Owned* theirs = owners.add(std::make_unique<Owned>(t));
                {
                    std::lock_guard lock(handed_mu[(t + 1) % kThreads]);
                    handed[(t + 1) % kThreads].push_back(theirs);
                }
                std::unique_ptr<Owned> back = owners.remove(mine);
                if (back.get() != mine || back->value != t) ++wrong;
                std::vector<Owned*> inbox;
                {
                    std::lock_guard lock(handed_mu[t]);
                    inbox.swap(handed[t]);
                }
                for (Owned* o : inbox)
                    if (owners.remove(o).get() != o) ++wrong;
            }
        });
    }
    for (auto& th : threads) th.join();
    EXPECT_EQ(wrong.load(), 0);
    // What was handed last and not yet taken is still owned, and only that.
    std::set<Owned*> left;
    for (auto& inbox : handed) left.insert(inbox.begin(), inbox.end());
    std::vector<std::unique_ptr<Owned>> rest = owners.take_all();
    std::set<Owned*> taken;
    for (auto& o : rest) taken.insert(o.get());
    EXPECT_EQ(taken, left);
}

class CpuEventThreads : public CpuPluginTest {};

TEST_F(CpuEventThreads, EventsComeAndGoOnManyThreadsWhileOthersAreRecordedAndQueried) {
    constexpr int kThreads = 4, kRounds = 400;
    std::vector<keel_stream> streams;
    for (int t = 0; t < kThreads; ++t) streams.push_back(stream());
    std::atomic<int> failures{0};
    // Events a thread created, for the next thread to destroy.
    std::vector<std::vector<keel_event>> handed(kThreads);
    std::vector<std::mutex> handed_mu(kThreads);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&, t] {
            const keel_stream s = streams[static_cast<std::size_t>(t)];
            const keel_stream next = streams[static_cast<std::size_t>((t + 1) % kThreads)];
            for (int i = 0; i < kRounds; ++i) {
                keel_event e = nullptr, given = nullptr;
                if (take(api().event_create(dev(), 0, &e)) || take(api().event_create(dev(), 0, &given))) {
                    ++failures;
                    return;
                }
                int32_t done = 0;
                if (take(api().event_record(e, s)) || take(api().stream_wait_event(next, e)) ||
                    take(api().event_query(e, &done)) || take(api().event_record(given, s)))
                    ++failures;
                {
                    std::lock_guard lock(handed_mu[(t + 1) % kThreads]);
                    handed[(t + 1) % kThreads].push_back(given);
                }
                if (take(api().event_destroy(e))) ++failures;
                std::vector<keel_event> inbox;
                {
                    std::lock_guard lock(handed_mu[t]);
                    inbox.swap(handed[t]);
                }
                for (keel_event other : inbox) {
                    if (take(api().event_synchronize(other)) || take(api().event_destroy(other))) ++failures;
                }
            }
        });
    }
    for (auto& th : threads) th.join();
    for (auto& inbox : handed)
        for (keel_event e : inbox) KEEL_EXPECT_OK(api().event_destroy(e));
    for (keel_stream s : streams) KEEL_EXPECT_OK(api().stream_synchronize(s));
    EXPECT_EQ(failures.load(), 0);
}

}  // namespace
}  // namespace keel::cpu::testing
