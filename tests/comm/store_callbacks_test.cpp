// A framework's store callbacks may throw (c10d's Store raises on a closed
// socket): keel turns what they throw into an error on every path that calls
// them (Store's own members, create, a communicator's end), never an
// exception out of a keel call or a terminate on a keel thread.
#include <keel/comm.hpp>
#include <keel/keel.hpp>
#include <keel/testing/result.hpp>

#include <gtest/gtest.h>

#include <condition_variable>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>

namespace keel {
namespace {

// An in-memory store whose `throwing` callback ("set", "get" or "erase")
// throws; with `not_std`, something that is not a std::exception.
struct ThrowingMemoryStore {
    std::string throwing;
    bool not_std = false;
    std::mutex mutex;
    std::condition_variable changed;
    std::map<std::string, std::vector<std::byte>> keys;

    void maybe_throw(const char* which) const {
        if (throwing != which) return;
        if (not_std) throw 42;
        throw std::runtime_error(std::string("the framework's ") + which + " failed");
    }

    Store store() {
        return Store::callbacks(
                   [this](std::string_view key, std::span<const std::byte> value) -> Result<void> {
                       maybe_throw("set");
                       std::lock_guard guard(mutex);
                       keys[std::string(key)].assign(value.begin(), value.end());
                       changed.notify_all();
                       return {};
                   },
                   [this](std::string_view key, std::chrono::milliseconds timeout) -> Result<std::vector<std::byte>> {
                       maybe_throw("get");
                       std::unique_lock lock(mutex);
                       if (!changed.wait_for(lock, timeout, [&] { return keys.count(std::string(key)) > 0; }))
                           return Error(KEEL_STATUS_UNAVAILABLE, "no key " + std::string(key));
                       return keys[std::string(key)];
                   },
                   [this](std::string_view key) -> Result<void> {
                       maybe_throw("erase");
                       std::lock_guard guard(mutex);
                       keys.erase(std::string(key));
                       return {};
                   })
            .value();
    }
};

TEST(CommStoreCallbacks, WhatACallbackThrowsIsAnErrorNamingTheCallbackAndTheKey) {
    for (const bool not_std : {false, true}) {
        for (const char* which : {"set", "get", "erase"}) {
            SCOPED_TRACE(std::string(which) + (not_std ? " throws an int" : " throws a std::exception"));
            ThrowingMemoryStore memory{which, not_std};
            const Store store = memory.store();
            const std::byte one[1]{std::byte{1}};
            const Result<void> set = store.set("k", one);
            const Result<std::vector<std::byte>> got = store.get("k", std::chrono::milliseconds(100));
            const Result<void> erased = store.erase("k");
            const Error& error = std::string(which) == "set" ? set.error()
                                 : std::string(which) == "get" ? got.error()
                                                               : erased.error();
            EXPECT_EQ(error.code(), KEEL_STATUS_UNAVAILABLE);
            EXPECT_NE(error.message().find(std::string("the ") + which + " callback threw on key 'k'"),
                      std::string::npos)
                << error.message();
            EXPECT_NE(error.message().find(not_std ? "not a std::exception" : "failed"), std::string::npos)
                << error.message();
        }
    }
}

// Before, each of these ended the test in std::terminate.
TEST(CommStoreCallbacks, ACommunicatorOverAThrowingStoreFailsOrEndsWithoutAnException) {
    const Runtime rt = Runtime::create().value();
    const Device dev = rt.device("cpu:0").value();
    CommOptions options;
    options.timeout = std::chrono::seconds(5);
    for (const char* which : {"set", "get"}) {
        SCOPED_TRACE(which);
        ThrowingMemoryStore memory{which};
        const Result<Communicator> comm = Communicator::create(dev, memory.store(), 0, 1, options);
        ASSERT_FALSE(comm.ok());
        EXPECT_NE(comm.error().message().find(std::string("the ") + which + " callback threw"), std::string::npos)
            << comm.error().message();
    }
    // erase runs when the ranks have met and when the communicator goes.
    ThrowingMemoryStore memory{"erase"};
    {
        KEEL_ASSERT_OK_AND_ASSIGN(Communicator comm, Communicator::create(dev, memory.store(), 0, 1, options));
        const Stream s = Stream::create(dev).value();
        KEEL_EXPECT_OK(comm.barrier(s));
        KEEL_EXPECT_OK(s.synchronize());
    }
}

// A store that fails while a rank waits for its peers (a Redis server or the
// TCP store's host gone) is named as the cause, not read as a late rank.
TEST(CommStoreCallbacks, AStoreThatFailsWhileRanksMeetIsNamedNotReadAsALateRank) {
    const Runtime rt = Runtime::create().value();
    const Device dev = rt.device("cpu:0").value();
    ThrowingMemoryStore memory;  // throws nothing
    const Store working = memory.store();
    const Store failing = Store::callbacks(
                              [&](std::string_view key, std::span<const std::byte> value) { return working.set(key, value); },
                              [&](std::string_view key, std::chrono::milliseconds timeout) -> Result<std::vector<std::byte>> {
                                  if (key.find("arrived/1") != std::string_view::npos)
                                      return Error(KEEL_STATUS_UNAVAILABLE, "the server went away");
                                  return working.get(key, timeout);
                              },
                              [&](std::string_view key) { return working.erase(key); })
                              .value();
    CommOptions options;
    options.timeout = std::chrono::seconds(60);
    const Result<Communicator> comm = Communicator::create(dev, failing, 0, 2, options);
    ASSERT_FALSE(comm.ok());
    EXPECT_EQ(comm.error().code(), KEEL_STATUS_UNAVAILABLE);
    const std::string& message = comm.error().message();
    EXPECT_NE(message.find("the store failed after"), std::string::npos) << message;
    EXPECT_NE(message.find("waited for rank 1 to arrive"), std::string::npos) << message;
    EXPECT_NE(message.find("the server went away"), std::string::npos) << message;
    EXPECT_EQ(message.find("did not arrive within"), std::string::npos) << message;
}

}  // namespace
}  // namespace keel
