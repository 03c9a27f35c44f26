// Staged copies on the deterministic fake device: the fake reads a copy's
// host source only when the test completes the copy, so a staging block
// reused (or a container read) too early shows up as wrong data, and under
// ASan as a use after free.
#include "fake_device.hpp"

#include "memory/buffer.hpp"
#include "memory/transfer.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <numeric>
#include <span>
#include <thread>
#include <atomic>
#include <algorithm>

namespace keel::memory {
namespace {

using testing::FakeDevice;
using testing::quiet_config;


struct TransferRig {
    explicit TransferRig(FakeDevice::Options options = {}, MemoryConfig config = quiet_config())
        : device(options), core(MemoryCore::create(device, config)) {}
    ~TransferRig() { device.complete_all(); }
    Buffer buffer(keel_stream s, std::uint64_t size) {
        auto r = allocate(core, s, size);
        EXPECT_TRUE(r.ok());
        return r.ok() ? std::move(*r) : Buffer{};
    }
    template <class T>
    std::vector<T> device_bytes(const Buffer& b, std::size_t count) {
        auto raw = device.read(b.address(), count * sizeof(T));
        std::vector<T> out(count);
        std::memcpy(out.data(), raw.data(), raw.size());
        return out;
    }
    FakeDevice device;
    std::shared_ptr<MemoryCore> core;
};

// What Stream::copy does with a host range (staged) or a moved-in vector
// (held, no staging) once it has checked the sizes.
template <class R>
Result<void> upload(TransferRig& rig, keel_stream s, const R& src, const Buffer& dst) {
    return copy_to_device(*rig.core, s, dst.address(), std::as_bytes(std::span(src)));
}
template <class T>
Result<void> upload(TransferRig& rig, keel_stream s, std::vector<T>&& src, const Buffer& dst) {
    const auto bytes = std::as_bytes(std::span(src));
    return copy_to_device_owned(*rig.core, s, dst.address(), bytes, keel::detail::owning(std::move(src)));
}
// What Stream::copy_to_vector does.
template <class T>
Result<HostFuture<T>> download(TransferRig& rig, keel_stream s, const Buffer& src, std::size_t count) {
    std::vector<T> data(count);
    KEEL_TRY_ASSIGN(HostCopy copy, copy_from_device(rig.core, s, std::as_writable_bytes(std::span(data)),
                                                    src.address()));
    return HostFuture<T>(std::move(data), std::move(copy));
}

std::vector<std::uint32_t> iota(std::size_t n, std::uint32_t start) {
    std::vector<std::uint32_t> v(n);
    std::iota(v.begin(), v.end(), start);
    return v;
}

TEST(Transfer, ContainerMayBeDestroyedRightAfterAnAsyncCopy) {
    TransferRig rig;
    keel_stream s = rig.device.make_stream();
    Buffer buf = rig.buffer(s, 4096 * sizeof(std::uint32_t));
    {
        auto data = std::make_unique<std::vector<std::uint32_t>>(iota(4096, 7));
        ASSERT_TRUE(upload(rig, s, *data, buf).ok());
        std::fill(data->begin(), data->end(), 0u);  // changed, then destroyed
    }
    EXPECT_EQ(rig.device.unfinished(s), 1u);  // the copy has not run yet
    rig.device.complete(s);
    EXPECT_EQ(rig.device_bytes<std::uint32_t>(buf, 4096), iota(4096, 7));
}

TEST(Transfer, AMovedInVectorIsCopiedWithoutStagingAndFreedAfterTheCopyRan) {
    TransferRig rig;
    keel_stream s = rig.device.make_stream();
    Buffer buf = rig.buffer(s, 4096 * sizeof(std::uint32_t));
    std::vector<std::uint32_t> data = iota(4096, 3);
    ASSERT_TRUE(upload(rig, s, std::move(data), buf).ok());
    EXPECT_EQ(rig.core->staging().stats().host_allocations, 0u);
    EXPECT_EQ(rig.core->tracker().outstanding(WorkKind::hold), 1u);  // the vector, held
    rig.core->tracker().sweep();
    EXPECT_EQ(rig.core->tracker().outstanding(WorkKind::hold), 1u);  // copy not run yet
    rig.device.complete(s);  // reads the vector's storage now (ASan: still alive)
    rig.core->tracker().sweep();
    EXPECT_EQ(rig.core->tracker().outstanding(WorkKind::hold), 0u);
    EXPECT_EQ(rig.device_bytes<std::uint32_t>(buf, 4096), iota(4096, 3));
}

TEST(Transfer, TinyCopiesTakeTheInlinePathWithoutStaging) {
    TransferRig rig;
    keel_stream s = rig.device.make_stream();
    Buffer buf = rig.buffer(s, 64);
    const double scalar = 2.5;
    ASSERT_TRUE(upload(rig, s, std::span(&scalar, 1), buf).ok());
    rig.device.complete(s);
    EXPECT_EQ(rig.device_bytes<double>(buf, 1)[0], 2.5);
    EXPECT_EQ(rig.device.counters().inline_h2d, 1u);
    EXPECT_EQ(rig.device.counters().host_allocs, 0u);
    EXPECT_EQ(rig.core->staging().stats().inline_copies, 1u);
}

TEST(Transfer, TinyCopiesAreStagedWhenThePluginHasNoInlineCopy) {
    FakeDevice::Options options;
    options.inline_copy = false;
    TransferRig rig(options);
    keel_stream s = rig.device.make_stream();
    Buffer buf = rig.buffer(s, 64);
    const std::int64_t scalar = -3;
    ASSERT_TRUE(upload(rig, s, std::span(&scalar, 1), buf).ok());
    rig.device.complete(s);
    EXPECT_EQ(rig.device_bytes<std::int64_t>(buf, 1)[0], -3);
    EXPECT_EQ(rig.device.counters().h2d, 1u);
}

TEST(Transfer, LargeCopiesAreSplitIntoChunks) {
    MemoryConfig config = quiet_config();
    config.staging.chunk_bytes = 1 * MiB;
    TransferRig rig({}, config);
    keel_stream s = rig.device.make_stream();
    const std::size_t n = (2 * MiB + 12345) / sizeof(std::uint32_t);
    Buffer buf = rig.buffer(s, n * sizeof(std::uint32_t));
    const auto data = iota(n, 1);
    ASSERT_TRUE(upload(rig, s, data, buf).ok());
    EXPECT_EQ(rig.device.counters().h2d, 3u);
    rig.device.complete(s);
    EXPECT_EQ(rig.device_bytes<std::uint32_t>(buf, n), data);
}

TEST(Transfer, StagingIsNotReusedBeforeItsCopyRan) {
    TransferRig rig;
    keel_stream s = rig.device.make_stream();
    Buffer a = rig.buffer(s, 64 * KiB);
    Buffer b = rig.buffer(s, 64 * KiB);
    const auto first = iota(16 * 1024, 100), second = iota(16 * 1024, 900);
    ASSERT_TRUE(upload(rig, s, first, a).ok());
    rig.core->tracker().sweep();
    ASSERT_TRUE(upload(rig, s, second, b).ok());
    EXPECT_EQ(rig.core->staging().stats().host_allocations, 2u);
    rig.device.complete(s);
    EXPECT_EQ(rig.device_bytes<std::uint32_t>(a, 16 * 1024), iota(16 * 1024, 100));
    EXPECT_EQ(rig.device_bytes<std::uint32_t>(b, 16 * 1024), iota(16 * 1024, 900));
}

TEST(Transfer, SteadyStateMakesNoPinnedAllocations) {
    TransferRig rig;
    keel_stream s = rig.device.make_stream();
    Buffer buf = rig.buffer(s, 1 * MiB);
    const auto data = iota(MiB / 4, 3);
    for (int i = 0; i < 3; ++i) {
        ASSERT_TRUE(upload(rig, s, data, buf).ok());
        rig.device.complete(s);
    }
    const std::uint64_t warm = rig.core->staging().stats().host_allocations;
    for (int i = 0; i < 100; ++i) {
        ASSERT_TRUE(upload(rig, s, data, buf).ok());
        rig.device.complete(s);
    }
    EXPECT_EQ(rig.core->staging().stats().host_allocations, warm);
    EXPECT_EQ(warm, 1u);
    EXPECT_GE(rig.core->staging().stats().reuses, 100u);
    EXPECT_EQ(rig.core->tracker().stats().events_created, 1u);
}

MemoryConfig ring_config() {
    MemoryConfig config = quiet_config();
    config.staging.chunk_bytes = 64 * KiB;
    config.staging.ring_chunks = 4;
    config.staging.ring_wait = std::chrono::microseconds{2000};
    return config;
}

TEST(Transfer, ALargeCopyOnAnIdleStreamReusesItsOldestBlockOnceItsCopyRan) {
    TransferRig rig({}, ring_config());
    keel_stream s = rig.device.make_stream();
    const std::size_t n = 256 * 1024;  // 1 MiB: 16 chunks
    Buffer buf = rig.buffer(s, n * 4);
    const auto data = iota(n, 11);
    // The fake runs a copy (and reads its block) only when the host waits
    // for its event: a block refilled before that would corrupt the data.
    ASSERT_TRUE(upload(rig, s, data, buf).ok());
    const StagingStats st = rig.core->staging().stats();
    EXPECT_EQ(st.host_allocations, 4u);
    EXPECT_EQ(st.ring_reuses, 12u);
    EXPECT_EQ(st.ring_give_ups, 0u);
    rig.device.complete(s);
    EXPECT_EQ(rig.device_bytes<std::uint32_t>(buf, n), data);
    EXPECT_TRUE(rig.device.violations().empty());
}

TEST(Transfer, ALargeCopyBehindUnfinishedWorkStopsReusingAfterRingWait) {
    TransferRig rig({}, ring_config());
    keel_stream s = rig.device.make_stream();
    rig.device.set_stuck(s, true);
    rig.device.enqueue_work(s);  // the stream is busy and will not move
    const std::size_t n = 256 * 1024;
    Buffer buf = rig.buffer(s, n * 4);
    const auto data = iota(n, 12);
    ASSERT_TRUE(upload(rig, s, data, buf).ok());  // returns
    const StagingStats st = rig.core->staging().stats();
    EXPECT_EQ(st.ring_give_ups, 1u);
    EXPECT_EQ(st.ring_reuses, 0u);
    EXPECT_EQ(st.host_allocations, 16u);
    EXPECT_EQ(rig.device.counters().host_syncs, 0u);  // polled, never blocked
    rig.device.set_stuck(s, false);
    rig.device.complete(s);
    EXPECT_EQ(rig.device_bytes<std::uint32_t>(buf, n), data);
    EXPECT_TRUE(rig.device.violations().empty());
}

TEST(Transfer, WithoutARingEveryChunkTakesABlockFromThePool) {
    MemoryConfig config = ring_config();
    config.staging.ring_chunks = 0;
    TransferRig rig({}, config);
    keel_stream s = rig.device.make_stream();
    const std::size_t n = 256 * 1024;
    Buffer buf = rig.buffer(s, n * 4);
    const auto data = iota(n, 13);
    ASSERT_TRUE(upload(rig, s, data, buf).ok());
    EXPECT_EQ(rig.core->staging().stats().host_allocations, 16u);
    EXPECT_EQ(rig.core->staging().stats().ring_reuses, 0u);
    rig.device.complete(s);
    EXPECT_EQ(rig.device_bytes<std::uint32_t>(buf, n), data);
}

TEST(Transfer, AStuckStreamDoesNotBlockReuseOfOtherStagingBlocks) {
    TransferRig rig;
    keel_stream stuck = rig.device.make_stream();
    keel_stream moving = rig.device.make_stream();
    rig.device.set_stuck(stuck, true);
    Buffer a = rig.buffer(stuck, 64 * KiB);
    Buffer b = rig.buffer(moving, 64 * KiB);
    const auto data = iota(16 * 1024, 5);
    ASSERT_TRUE(upload(rig, stuck, data, a).ok());  // never completes
    for (int i = 0; i < 20; ++i) {
        ASSERT_TRUE(upload(rig, moving, data, b).ok());
        rig.device.complete(moving);
    }
    // One block stuck with its copy, one cycling on the moving stream.
    EXPECT_EQ(rig.core->staging().stats().host_allocations, 2u);
    EXPECT_TRUE(rig.device.violations().empty());
    rig.device.set_stuck(stuck, false);
}

TEST(Transfer, InFlightStagingIsBoundedWhenTheHostRunsAhead) {
    MemoryConfig config = quiet_config();
    config.staging.chunk_bytes = 256 * KiB;
    config.limits.max_staging_in_flight_bytes = 1 * MiB;
    TransferRig rig({}, config);
    keel_stream s = rig.device.make_stream();
    std::vector<Buffer> buffers;
    for (int i = 0; i < 16; ++i) buffers.push_back(rig.buffer(s, 256 * KiB));
    for (int i = 0; i < 16; ++i) {
        // Never completed by the test: only the bound's host waits move it.
        const auto data = iota(64 * 1024, i * 1000);  // an lvalue: staged
        ASSERT_TRUE(upload(rig, s, data, buffers[i]).ok());
    }
    const StagingStats st = rig.core->staging().stats();
    EXPECT_LE(st.peak_in_flight_bytes, 1 * MiB);
    EXPECT_GT(st.in_flight_waits, 0u);
    EXPECT_LE(st.reserved_bytes, 1 * MiB + 256 * KiB);
    rig.device.complete(s);
    for (int i = 0; i < 16; ++i)
        EXPECT_EQ(rig.device_bytes<std::uint32_t>(buffers[i], 64 * 1024), iota(64 * 1024, i * 1000));
}

TEST(Transfer, DeviceToHostCompletesThroughAFuture) {
    TransferRig rig;
    keel_stream s = rig.device.make_stream();
    Buffer buf = rig.buffer(s, 1000 * sizeof(std::uint32_t));
    const auto data = iota(1000, 42);
    ASSERT_TRUE(upload(rig, s, data, buf).ok());
    auto future = download<std::uint32_t>(rig, s, buf, 1000);
    ASSERT_TRUE(future.ok());
    auto ready = future->ready();
    ASSERT_TRUE(ready.ok());
    EXPECT_FALSE(*ready);
    auto got = std::move(*future).get();  // waiting lets the fake device run
    ASSERT_TRUE(got.ok());
    EXPECT_EQ(*got, data);
}

TEST(Transfer, DeviceToHostIsOneCopyStraightIntoTheDestinationWithoutStaging) {
    TransferRig rig;
    keel_stream s = rig.device.make_stream();
    for (const std::size_t size : {std::size_t{1}, 4 * KiB + 3, 3 * MiB + 5}) {
        Buffer buf = rig.buffer(s, size);
        std::vector<std::uint8_t> data(size);
        for (std::size_t i = 0; i < size; ++i) data[i] = static_cast<std::uint8_t>(i * 7 + size);
        ASSERT_TRUE(upload(rig, s, data, buf).ok());
        rig.device.complete(s);
        rig.core->tracker().sweep();  // the upload's staging comes back
        const StagingStats before = rig.core->staging().stats();
        const std::uint64_t d2h_before = rig.device.counters().d2h;
        std::vector<std::uint8_t> out(size, 0);
        auto copy = copy_from_device(rig.core, s, std::as_writable_bytes(std::span(out)), buf.address());
        ASSERT_TRUE(copy.ok());
        EXPECT_EQ(rig.device.counters().d2h, d2h_before + 1) << size;  // one copy, not chunked
        // The device writes the destination itself, when the copy executes.
        rig.device.complete(s);
        EXPECT_EQ(out, data) << size;
        ASSERT_TRUE(copy->wait().ok());
        EXPECT_TRUE(copy->wait().ok());  // later calls: ok at once
        const StagingStats after = rig.core->staging().stats();
        EXPECT_EQ(after.host_allocations, before.host_allocations) << size;
        EXPECT_EQ(after.reuses, before.reuses) << size;
        EXPECT_EQ(before.in_flight_bytes, 0u) << size;
        EXPECT_EQ(after.in_flight_bytes, 0u) << size;
    }
    EXPECT_TRUE(rig.device.violations().empty());
}

TEST(Transfer, DroppingAHostCopyWaitsForTheCopySoTheDestinationMayBeFreedRightAfter) {
    TransferRig rig;
    keel_stream s = rig.device.make_stream();
    const std::size_t n = 100 * 1024;
    Buffer buf = rig.buffer(s, n * 4);
    const auto data = iota(n, 9);
    ASSERT_TRUE(upload(rig, s, data, buf).ok());
    auto out = std::make_unique<std::vector<std::uint32_t>>(n, 0u);
    {
        auto copy = copy_from_device(rig.core, s, std::as_writable_bytes(std::span(*out)), buf.address());
        ASSERT_TRUE(copy.ok());
        EXPECT_EQ((*out)[0], 0u);  // the fake has not run it yet
    }  // dropped: waits, which lets the fake run the copy
    EXPECT_EQ(rig.device.unfinished(s), 0u);
    EXPECT_EQ(*out, data);
    out.reset();  // a copy still pending would now write freed memory (ASan)
    rig.device.complete_all();
    // The event went back to the pool: the next copy makes none.
    const std::uint64_t events = rig.core->tracker().stats().events_created;
    std::vector<std::uint32_t> again(n, 0);
    {
        auto copy = copy_from_device(rig.core, s, std::as_writable_bytes(std::span(again)), buf.address());
        ASSERT_TRUE(copy.ok());
    }
    EXPECT_EQ(again, data);
    EXPECT_EQ(rig.core->tracker().stats().events_created, events);
    EXPECT_TRUE(rig.device.violations().empty());
}

TEST(Transfer, DroppingAHostFutureNeverBlocksAndFreesItsVectorOnlyOnceTheCopyRan) {
    TransferRig rig;
    keel_stream s = rig.device.make_stream();
    const std::size_t n = 300 * 1024;
    Buffer buf = rig.buffer(s, n * 4);
    const auto data = iota(n, 4);
    ASSERT_TRUE(upload(rig, s, data, buf).ok());
    rig.device.complete(s);
    // A stuck stream: a host wait on it would be a violation (and fail).
    rig.device.set_stuck(s, true);
    const std::uint64_t syncs = rig.device.counters().host_syncs;
    {
        auto future = download<std::uint32_t>(rig, s, buf, n);
        ASSERT_TRUE(future.ok());
        // Moved around while in flight: the vector's storage goes along.
        HostFuture<std::uint32_t> moved = std::move(*future);
    }  // dropped without get(): the vector goes to a hold
    EXPECT_EQ(rig.device.counters().host_syncs, syncs);
    EXPECT_EQ(rig.core->tracker().outstanding(WorkKind::hold), 1u);
    rig.core->tracker().sweep();
    EXPECT_EQ(rig.core->tracker().outstanding(WorkKind::hold), 1u);  // the copy has not run
    // Running the copy now writes into the held vector: freed earlier, ASan
    // would report it.
    rig.device.set_stuck(s, false);
    rig.device.complete(s);
    rig.core->tracker().sweep();
    EXPECT_EQ(rig.core->tracker().outstanding(WorkKind::hold), 0u);
    EXPECT_TRUE(rig.device.violations().empty());
}

TEST(Transfer, AFailedDownloadReturnsTheErrorAndGivesItsEventBack) {
    TransferRig rig;
    keel_stream s = rig.device.make_stream();
    Buffer buf = rig.buffer(s, 4096);
    rig.device.complete(s);
    std::vector<std::uint8_t> out(4096, 0);
    int not_a_stream = 0;
    auto failed = copy_from_device(rig.core, reinterpret_cast<keel_stream>(&not_a_stream),
                                   std::as_writable_bytes(std::span(out)), buf.address());
    ASSERT_FALSE(failed.ok());
    EXPECT_NE(failed.error().message().find("Stream::copy"), std::string::npos) << failed.error().message();
    const std::uint64_t events = rig.core->tracker().stats().events_created;
    EXPECT_EQ(events, 1u);
    auto copy = copy_from_device(rig.core, s, std::as_writable_bytes(std::span(out)), buf.address());
    ASSERT_TRUE(copy.ok());
    ASSERT_TRUE(copy->wait().ok());
    EXPECT_EQ(rig.core->tracker().stats().events_created, events);  // the same event, reused
}

TEST(Transfer, WhenThePluginsPageableStagingIsFullACopyWaitsForItsStreamInsteadOfFailing) {
    FakeDevice::Options options;
    options.max_pageable_copies_in_flight = 2;
    TransferRig rig(options);
    keel_stream s = rig.device.make_stream();
    constexpr std::size_t n = 4096;
    std::vector<Buffer> bufs;
    for (int i = 0; i < 3; ++i) bufs.push_back(rig.buffer(s, n * sizeof(std::uint32_t)));
    rig.device.complete(s);
    // Moved-in vectors: the third finds the staging full, waits for the
    // first two to run, and goes through.
    for (std::uint32_t i = 0; i < 3; ++i) ASSERT_TRUE(upload(rig, s, iota(n, 100 * i), bufs[i]).ok()) << i;
    EXPECT_EQ(rig.device.counters().refused_pageable_copies, 1u);
    EXPECT_EQ(rig.core->staging().stats().plugin_staging_waits, 1u);
    rig.device.complete(s);
    for (std::uint32_t i = 0; i < 3; ++i) EXPECT_EQ(rig.device_bytes<std::uint32_t>(bufs[i], n), iota(n, 100 * i));
    // Downloads the same way.
    std::vector<std::vector<std::uint32_t>> outs(3, std::vector<std::uint32_t>(n, 0));
    std::vector<HostCopy> copies;
    for (std::size_t i = 0; i < 3; ++i) {
        auto copy = copy_from_device(rig.core, s, std::as_writable_bytes(std::span(outs[i])), bufs[i].address());
        ASSERT_TRUE(copy.ok()) << i << ": " << copy.error().message();
        copies.push_back(std::move(*copy));
    }
    EXPECT_EQ(rig.core->staging().stats().plugin_staging_waits, 2u);
    rig.device.complete(s);
    for (std::size_t i = 0; i < 3; ++i) {
        ASSERT_TRUE(copies[i].wait().ok());
        EXPECT_EQ(outs[i], iota(n, 100 * static_cast<std::uint32_t>(i)));
    }
    EXPECT_TRUE(rig.device.violations().empty());
}

TEST(Transfer, WhenAnotherStreamHoldsThePluginsPageableStagingACopySaysSoAndEnqueuesNothing) {
    FakeDevice::Options options;
    options.max_pageable_copies_in_flight = 1;
    TransferRig rig(options);
    keel_stream busy = rig.device.make_stream(), s = rig.device.make_stream();
    Buffer other = rig.buffer(busy, 4096), buf = rig.buffer(s, 4096);
    rig.device.complete_all();
    ASSERT_TRUE(upload(rig, busy, std::vector<std::uint8_t>(4096, 1), other).ok());  // holds the staging
    const auto before = rig.device.counters();
    auto refused = upload(rig, s, std::vector<std::uint8_t>(4096, 2), buf);
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.error().code(), KEEL_STATUS_OUT_OF_MEMORY);
    EXPECT_NE(refused.error().message().find("Stream::copy"), std::string::npos) << refused.error().message();
    std::vector<std::uint8_t> out(4096, 0);
    auto download = copy_from_device(rig.core, s, std::as_writable_bytes(std::span(out)), buf.address());
    ASSERT_FALSE(download.ok());
    EXPECT_EQ(download.error().code(), KEEL_STATUS_OUT_OF_MEMORY);
    EXPECT_EQ(rig.device.counters().h2d, before.h2d);
    EXPECT_EQ(rig.device.counters().d2h, before.d2h);
    EXPECT_EQ(rig.device.unfinished(s), 0u);
    rig.device.complete_all();
    EXPECT_TRUE(rig.device.violations().empty());
}

TEST(Transfer, AssigningOverAHostFutureInFlightHandsItsVectorToAHold) {
    TransferRig rig;
    keel_stream s = rig.device.make_stream();
    const std::size_t n = 64 * 1024;
    Buffer buf = rig.buffer(s, n * 4);
    const auto data = iota(n, 6);
    ASSERT_TRUE(upload(rig, s, data, buf).ok());
    auto first = download<std::uint32_t>(rig, s, buf, n);
    auto second = download<std::uint32_t>(rig, s, buf, n);
    ASSERT_TRUE(first.ok() && second.ok());
    *first = std::move(*second);  // the first copy is still pending
    EXPECT_EQ(rig.core->tracker().outstanding(WorkKind::hold), 1u);
    auto got = std::move(*first).get();
    ASSERT_TRUE(got.ok());
    EXPECT_EQ(*got, data);
    rig.core->tracker().sweep();
    EXPECT_EQ(rig.core->tracker().outstanding(WorkKind::hold), 0u);
}

// The parallel staged path: several host threads fill each chunk's block.
MemoryConfig parallel_config(std::uint32_t threads) {
    MemoryConfig config = quiet_config();
    config.staging.chunk_bytes = 512 * KiB;
    config.staging.copy_threads = threads;
    config.staging.parallel_min_bytes = 256 * KiB;
    return config;
}

class ParallelTransfer : public ::testing::TestWithParam<std::uint32_t> {};

TEST_P(ParallelTransfer, ASourceDestroyedRightAfterReturnArrivesWhole) {
    TransferRig rig({}, parallel_config(GetParam()));
    keel_stream s = rig.device.make_stream();
    const std::size_t n = (3 * MiB + 4100) / sizeof(std::uint32_t);
    Buffer buf = rig.buffer(s, n * sizeof(std::uint32_t));
    {
        auto data = std::make_unique<std::vector<std::uint32_t>>(iota(n, 5));
        ASSERT_TRUE(upload(rig, s, *data, buf).ok());
        std::fill(data->begin(), data->end(), 0u);  // reused, then destroyed
    }
    rig.device.complete(s);
    EXPECT_EQ(rig.device_bytes<std::uint32_t>(buf, n), iota(n, 5));
    const auto st = rig.core->staging().stats();
    EXPECT_EQ(st.host_copy_threads, GetParam());
    if (GetParam() > 1) EXPECT_EQ(st.parallel_copies, 6u);  // every full 512 KiB chunk
    else EXPECT_EQ(st.parallel_copies, 0u);
}

INSTANTIATE_TEST_SUITE_P(Threads, ParallelTransfer, ::testing::Values(1u, 2u, 8u));

TEST(Transfer, WhenPinnedMemoryRunsOutAnUploadWaitsForStagingThenGoesDirectAndADownloadNeedsNone) {
    FakeDevice::Options options;
    options.max_live_host_blocks = 2;
    MemoryConfig config = parallel_config(4);
    config.staging.ring_chunks = 0;
    config.staging.max_cached_bytes = 0;  // blocks go back to the device at once
    TransferRig rig(options, config);
    keel_stream s = rig.device.make_stream();
    const std::size_t n = 4 * MiB / sizeof(std::uint32_t);
    Buffer buf = rig.buffer(s, n * sizeof(std::uint32_t));
    // Two blocks at most: the third chunk waits for the stream, the copy
    // goes on staged, and it succeeds.
    auto data = std::make_unique<std::vector<std::uint32_t>>(iota(n, 3));
    ASSERT_TRUE(upload(rig, s, *data, buf).ok());
    data.reset();
    rig.device.complete(s);
    EXPECT_EQ(rig.device_bytes<std::uint32_t>(buf, n), iota(n, 3));
    EXPECT_EQ(rig.core->staging().stats().direct_copies, 0u);
    EXPECT_GE(rig.device.counters().host_syncs, 1u);

    // No pinned memory at all: straight from the source, waited for.
    FakeDevice::Options none;
    none.max_live_host_blocks = 0;
    TransferRig bare(none, parallel_config(4));
    keel_stream t = bare.device.make_stream();
    Buffer dst = bare.buffer(t, n * sizeof(std::uint32_t));
    auto src = std::make_unique<std::vector<std::uint32_t>>(iota(n, 8));
    ASSERT_TRUE(upload(bare, t, *src, dst).ok());
    src.reset();  // read by the device before upload returned
    EXPECT_EQ(bare.device_bytes<std::uint32_t>(dst, n), iota(n, 8));
    EXPECT_EQ(bare.core->staging().stats().direct_copies, 1u);
    // A download needs no pinned memory: asynchronous as ever, nothing waited for.
    const std::uint64_t syncs = bare.device.counters().host_syncs;
    std::vector<std::uint32_t> out(n, 0);
    auto copy = copy_from_device(bare.core, t, std::as_writable_bytes(std::span(out)), dst.address());
    ASSERT_TRUE(copy.ok());
    EXPECT_EQ(bare.device.counters().host_syncs, syncs);
    ASSERT_TRUE(copy->wait().ok());
    EXPECT_EQ(out, iota(n, 8));
    EXPECT_EQ(bare.core->staging().stats().direct_copies, 1u);
}

TEST(Transfer, ConcurrentParallelCopiesFromSeveralThreadsOnOneAndOnSeveralStreams) {
    FakeDevice::Options options;
    options.immediate = true;
    TransferRig rig(options, parallel_config(3));
    constexpr int kThreads = 4;
    const std::size_t n = (1 * MiB + 4096) / sizeof(std::uint32_t);
    for (bool shared_stream : {true, false}) {
        std::vector<keel_stream> streams;
        for (int i = 0; i < (shared_stream ? 1 : kThreads); ++i) streams.push_back(rig.device.make_stream());
        std::vector<Buffer> bufs;
        for (int i = 0; i < kThreads; ++i) bufs.push_back(rig.buffer(streams[0], n * sizeof(std::uint32_t)));
        std::vector<std::thread> threads;
        std::atomic<int> failures{0};
        for (int i = 0; i < kThreads; ++i) {
            threads.emplace_back([&, i] {
                keel_stream s = streams[shared_stream ? 0 : static_cast<std::size_t>(i)];
                for (int rep = 0; rep < 3; ++rep) {
                    const auto data = iota(n, static_cast<std::uint32_t>(i * 1000 + rep));
                    if (!upload(rig, s, data, bufs[static_cast<std::size_t>(i)]).ok()) ++failures;
                    std::vector<std::uint32_t> out(n, 0);
                    auto copy = copy_from_device(rig.core, s, std::as_writable_bytes(std::span(out)),
                                                 bufs[static_cast<std::size_t>(i)].address());
                    if (!copy.ok() || !copy->wait().ok() || out != data) ++failures;
                }
            });
        }
        for (auto& t : threads) t.join();
        EXPECT_EQ(failures.load(), 0);
    }
    EXPECT_TRUE(rig.device.violations().empty());
}

}  // namespace
}  // namespace keel::memory
