// Out-of-range accesses are refused by the enqueue that makes them, and
// host memory that is gone when its copy runs is reported as a use after
// free of host memory naming the copy (never a crash of the checker).
#include "checked_session.hpp"

#include <csignal>
#include <sys/mman.h>

namespace keel::cpu::testing {
namespace {

// --- one byte past an allocation ---------------------------------------------

TEST(CheckerRanges, AnAccessOneBytePastAnAllocationIsRefusedAtEnqueue) {
    for (const CheckerRun& run : checker_runs()) {
        SCOPED_TRACE(run.name);
        std::vector<uint8_t> host(kBytes + 1, 0xEE);  // outlives the session, which drains the streams
        std::vector<uint8_t> back(kBytes);
        CheckedSession t(run.env);
        keel_stream s = t.stream();
        keel_device_addr a = t.alloc(kBytes), neighbour = t.alloc(kBytes);
        KEEL_ASSERT_OK(t.api().memset_d8(s, neighbour, 0x33, kBytes));
        expect_finding(take(t.api().memcpy_h2d(s, a, host.data(), kBytes + 1)), KEEL_STATUS_OUT_OF_RANGE,
                       {"[cpu memcpy_h2d] out of range: memcpy_h2d #2 on stream 1: destination",
                        "+4097 bytes) runs past the end of allocation #1"});
        expect_finding(take(t.api().stream_synchronize(s)), KEEL_STATUS_OUT_OF_RANGE, {"out of range"});
        keel_stream reader = t.stream();
        KEEL_ASSERT_OK(t.api().memcpy_d2h(reader, back.data(), neighbour, kBytes));
        KEEL_ASSERT_OK(t.api().stream_synchronize(reader));
        EXPECT_EQ(back, std::vector<uint8_t>(kBytes, 0x33)) << "the neighbour was corrupted";
    }
}

TEST(CheckerRanges, KernelsAndReadsOnePastTheEndAreRefusedToo) {
    std::vector<uint8_t> back(kBytes + 1);
    CheckedSession t(ScopedEnv::Vars{{"KEEL_CPU_CHECK", "1"}});
    keel_stream s = t.stream();
    keel_device_addr a = t.alloc(kBytes);
    expect_finding(t.fill(s, a + 4, kBytes, 1.0f), KEEL_STATUS_OUT_OF_RANGE,
                   {"out of range: kernel fill #1 on stream 1: out", "runs past the end of allocation #1"});
    keel_stream r = t.stream();
    expect_finding(take(t.api().memcpy_d2h(r, back.data(), a, kBytes + 1)), KEEL_STATUS_OUT_OF_RANGE,
                   {"out of range: memcpy_d2h #1 on stream 2: source"});
}

TEST(CheckerRanges, AnAccessEndingExactlyAtTheEndOfAnAllocationIsClean) {
    for (const CheckerRun& run : checker_runs()) {
        SCOPED_TRACE(run.name);
        std::vector<uint8_t> host(kBytes, 0xEE), back(1);
        CheckedSession t(run.env);
        keel_stream s = t.stream();
        keel_device_addr a = t.alloc(kBytes);
        KEEL_ASSERT_OK(t.api().memcpy_h2d(s, a, host.data(), kBytes));
        ASSERT_FALSE(t.fill(s, a + 4, kBytes - 4, 1.0f));
        KEEL_ASSERT_OK(t.api().memcpy_d2h(s, back.data(), a + kBytes - 1, 1));
        KEEL_EXPECT_OK(t.api().stream_synchronize(s));
        EXPECT_TRUE(t.error_logs().empty());
    }
}

TEST(CheckerRanges, ACopyRunningPastTheEndOfAPinnedBlockIsRefused) {
    CheckedSession t(ScopedEnv::Vars{{"KEEL_CPU_CHECK", "1"}});
    keel_stream s = t.stream();
    keel_device_addr a = t.alloc(2 * kBytes);
    auto* staging = static_cast<std::byte*>(t.pinned(kBytes));
    expect_finding(take(t.api().memcpy_h2d(s, a, staging + 1, kBytes)), KEEL_STATUS_OUT_OF_RANGE,
                   {"out of range: memcpy_h2d #1 on stream 1: host source", "runs past the end of pinned allocation #2"});
}

// --- host memory unmapped before its copy runs ---------------------------------

// 16 MiB of host memory the test maps itself: a std::vector that large is
// unmapped by glibc's free() the same way, but not by a sanitizer's
// allocator, which keeps it in quarantine.
class HostMapping {
public:
    explicit HostMapping(std::size_t size) : size_(size) {
        void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p != MAP_FAILED) p_ = static_cast<std::byte*>(p);
    }
    HostMapping(const HostMapping&) = delete;
    HostMapping& operator=(const HostMapping&) = delete;
    HostMapping(HostMapping&&) = delete;
    HostMapping& operator=(HostMapping&&) = delete;
    ~HostMapping() { unmap(); }
    std::byte* get() const { return p_; }
    void unmap() {
        if (p_) munmap(p_, size_);
        p_ = nullptr;
    }

private:
    std::byte* p_ = nullptr;
    std::size_t size_;
};

constexpr std::size_t kLarge = 16u << 20;

TEST(CheckerHostMemory, AHostSourceUnmappedBeforeItsCopyRanIsAUseAfterFreeNamingTheCopy) {
    for (const CheckerRun& run : checker_runs()) {
        SCOPED_TRACE(run.name);
        CheckedSession t(run.env);
        keel_stream s = t.stream();
        keel_device_addr d = t.alloc(kLarge);
        HostMapping host(kLarge);
        ASSERT_NE(host.get(), nullptr);
        std::memset(host.get(), 5, kLarge);
        Gate* gate = t.block(s);
        KEEL_ASSERT_OK(t.api().memcpy_h2d(s, d, host.get(), kLarge));
        const auto where = reinterpret_cast<std::uintptr_t>(host.get());
        host.unmap();  // the bug: freed before the copy ran
        gate->open();
        char addr[32];
        std::snprintf(addr, sizeof addr, "0x%016llx", static_cast<unsigned long long>(where));
        expect_finding(take(t.api().stream_synchronize(s)), KEEL_STATUS_OUT_OF_RANGE,
                       {"[cpu memcpy_h2d] stream 1: use after free of host memory: memcpy_h2d #2 on stream 1: its host "
                        "source [" + std::string(addr) + ", +16777216 bytes) is not mapped",
                        "when the copy ran"});
    }
}

TEST(CheckerHostMemory, AHostDestinationUnmappedBeforeItsCopyRanIsAUseAfterFreeToo) {
    CheckedSession t(ScopedEnv::Vars{{"KEEL_CPU_CHECK", "1"}});
    keel_stream s = t.stream();
    keel_device_addr d = t.alloc(kLarge);
    KEEL_ASSERT_OK(t.api().memset_d8(s, d, 1, kLarge));
    HostMapping host(kLarge);
    Gate* gate = t.block(s);
    KEEL_ASSERT_OK(t.api().memcpy_d2h(s, host.get(), d, kLarge));
    host.unmap();
    gate->open();
    expect_finding(take(t.api().stream_synchronize(s)), KEEL_STATUS_OUT_OF_RANGE,
                   {"use after free of host memory: memcpy_d2h #3 on stream 1: its host destination"});
}

TEST(CheckerHostMemory, AHostBufferUnmappedAfterItsCopyCompletedIsClean) {
    for (const CheckerRun& run : checker_runs()) {
        SCOPED_TRACE(run.name);
        std::vector<uint8_t> back(64);
        CheckedSession t(run.env);
        keel_stream s = t.stream();
        keel_device_addr d = t.alloc(kLarge);
        HostMapping host(kLarge);
        std::memset(host.get(), 5, kLarge);
        Gate* gate = t.block(s);
        KEEL_ASSERT_OK(t.api().memcpy_h2d(s, d, host.get(), kLarge));
        gate->open();
        KEEL_ASSERT_OK(t.api().stream_synchronize(s));
        host.unmap();
        KEEL_ASSERT_OK(t.api().memcpy_d2h(s, back.data(), d + kLarge - 64, 64));
        KEEL_ASSERT_OK(t.api().stream_synchronize(s));
        EXPECT_EQ(back, std::vector<uint8_t>(64, 5));
        EXPECT_TRUE(t.error_logs().empty());
    }
}

TEST(CheckerHostMemory, AHostSourceAlreadyUnmappedAtEnqueueIsRefusedThere) {
    CheckedSession t(ScopedEnv::Vars{{"KEEL_CPU_CHECK", "1"}});
    keel_stream s = t.stream();
    keel_device_addr d = t.alloc(kLarge);
    HostMapping host(kLarge);
    std::byte* gone = host.get();
    host.unmap();
    expect_finding(take(t.api().memcpy_h2d(s, d, gone, kLarge)), KEEL_STATUS_OUT_OF_RANGE,
                   {"use after free of host memory: memcpy_h2d on stream 1: its host source", "at enqueue"});
    expect_finding(take(t.api().stream_synchronize(s)), KEEL_STATUS_OUT_OF_RANGE, {"use after free of host memory"});
}


// Freed pinned blocks are guarded by a fault handler while quarantined; it
// must not outlive the plugin (it would point into an unloaded library).
TEST(CheckerPinnedGuard, TheFaultHandlerComesAndGoesWithTheGuardedBlocks) {
    struct sigaction before {};
    ASSERT_EQ(sigaction(SIGSEGV, nullptr, &before), 0);
    {
        CheckedSession t({{"KEEL_CPU_CHECK", "1"}, {"KEEL_CPU_POISON", "1"}});
        void* p = t.pinned(4096);
        ASSERT_NE(p, nullptr);
        KEEL_ASSERT_OK(t.api().host_free(t.dev(), p));  // quarantined and guarded
        t.forget_pinned(p);
        struct sigaction during {};
        ASSERT_EQ(sigaction(SIGSEGV, nullptr, &during), 0);
        EXPECT_TRUE((during.sa_flags & SA_SIGINFO) != 0 && during.sa_sigaction != before.sa_sigaction)
            << "no fault handler while a freed pinned block is guarded";
    }
    struct sigaction after {};
    ASSERT_EQ(sigaction(SIGSEGV, nullptr, &after), 0);
    EXPECT_EQ(after.sa_flags & SA_SIGINFO, before.sa_flags & SA_SIGINFO);
    if ((before.sa_flags & SA_SIGINFO) != 0)
        EXPECT_EQ(after.sa_sigaction, before.sa_sigaction) << "the plugin left its fault handler behind";
    else
        EXPECT_EQ(after.sa_handler, before.sa_handler) << "the plugin left its fault handler behind";
}

}  // namespace
}  // namespace keel::cpu::testing
