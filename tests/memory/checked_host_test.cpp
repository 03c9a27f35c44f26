// The host side of the boundary under the CPU checker (KEEL_CHECK=1, random
// delays), through the public API as a framework writes it: each planted
// bug is caught under every one of 20 seeds and its clean twin is clean
// under every one of them. A caught host access stops the program (the
// guard's diagnostic, then abort), so every scenario runs in a forked child
// with the plugin loaded afresh there; scenarios that report through an
// error (and the clean twins) loop over the seeds inside one child, one
// Runtime per seed, to keep the test fast. The parent never loads a
// plugin, so it forks with one thread.
#include <keel/keel.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <vector>
#include <sys/wait.h>
#include <unistd.h>

namespace keel {
namespace {

constexpr int kSeeds = 20;

// Sanitizers bring their own allocator, which keeps a freed block untouched
// in its quarantine (neither writes its bookkeeping into it nor unmaps or
// reuses it): a destination freed early is then not seen at all.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitizerAllocator = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
constexpr bool kSanitizerAllocator = true;
#else
constexpr bool kSanitizerAllocator = false;
#endif
#else
constexpr bool kSanitizerAllocator = false;
#endif
#define SKIP_UNDER_SANITIZER_ALLOCATOR()                                                                    \
    if (kSanitizerAllocator)                                                                                \
    GTEST_SKIP() << "the sanitizer's allocator quarantines freed blocks untouched: nothing to see; the "  \
                    "normal build runs this"

// How a scenario ended in the child.
enum Exit : int {
    kClean = 0,     // every call succeeded and the host read the right values
    kReported = 3,  // a call returned the expected finding
    kMissed = 4,    // the bug went unnoticed
    kBroken = 5,    // something else failed
};

[[noreturn]] void leave(Exit code, const std::string& why = {}) {
    if (!why.empty()) std::fprintf(stderr, "%s\n", why.c_str());
    std::fflush(stderr);
    std::_Exit(code);
}

// A checked runtime with only the CPU plugin, loaded with `seed`.
Runtime checked_runtime(int seed) {
    ::setenv("KEEL_CHECK", "1", 1);
    ::setenv("KEEL_CPU_DELAY", "random:200", 1);
    ::setenv("KEEL_CPU_SEED", std::to_string(seed).c_str(), 1);
    RuntimeOptions options;
    options.plugin_path = {KEEL_CPU_PLUGIN_PATH};
    options.use_env_plugin_path = false;
    options.use_default_plugin_dirs = false;
    auto rt = Runtime::create(options);
    if (!rt.ok()) leave(kBroken, "Runtime::create: " + rt.error().message());
    return std::move(*rt);
}

template <class T>
T must(Result<T> r, const char* what) {
    if (!r.ok()) leave(kBroken, std::string(what) + ": " + r.error().message());
    return std::move(*r);
}
void must(const Result<void>& r, const char* what) {
    if (!r.ok()) leave(kBroken, std::string(what) + ": " + r.error().message());
}

// Thrown out of a scenario whose bug a call reported (ends that seed).
struct Reported {
    std::string message;
};

// A bug that a call reports: `r` must have failed saying `what`.
void expect_reported(const Result<void>& r, const std::string& what) {
    if (r.ok()) leave(kMissed, "not reported");
    if (r.error().message().find(what) == std::string::npos) leave(kBroken, "unexpected error: " + r.error().message());
    throw Reported{r.error().message()};
}

bool all_equal(const std::uint8_t* p, std::size_t n, std::uint8_t value) {
    for (std::size_t i = 0; i < n; ++i)
        if (p[i] != value) return false;
    return true;
}

// One scenario with a fresh runtime of `seed`: exits the child when it
// ends otherwise than clean.
using Scenario = std::function<void(const Device&)>;

void run_seed(int seed, const Scenario& scenario) {
    Runtime rt = checked_runtime(seed);
    Device d = must(rt.device("cpu:0"), "cpu:0");
    scenario(d);
}

struct Outcome {
    int status = 0;
    std::string output;  // the child's stderr

    [[nodiscard]] bool aborted() const { return WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT; }
    [[nodiscard]] int exit_code() const { return WIFEXITED(status) ? WEXITSTATUS(status) : -1; }
    [[nodiscard]] bool says(const std::string& s) const { return output.find(s) != std::string::npos; }
};

// Runs `body` in a child whose stderr comes back.
Outcome in_child(const std::function<void()>& body) {
    int pipe_fds[2];
    if (pipe(pipe_fds) != 0) return {-1, "pipe failed"};
    std::fflush(nullptr);
    const pid_t pid = fork();
    if (pid == 0) {
        close(pipe_fds[0]);
        dup2(pipe_fds[1], STDERR_FILENO);
        try {
            body();
        } catch (const Reported& r) {
            leave(kReported, r.message);
        } catch (...) {
            leave(kBroken, "an exception left the scenario");
        }
        leave(kClean);
    }
    close(pipe_fds[1]);
    Outcome out;
    char buf[4096];
    for (ssize_t n; (n = read(pipe_fds[0], buf, sizeof buf)) > 0;) out.output.append(buf, static_cast<std::size_t>(n));
    close(pipe_fds[0]);
    waitpid(pid, &out.status, 0);
    return out;
}

// The clean twin: clean under every seed, in one child.
void expect_clean_every_seed(const Scenario& twin) {
    const Outcome out = in_child([&] {
        for (int seed = 1; seed <= kSeeds; ++seed) run_seed(seed, twin);
    });
    EXPECT_EQ(out.exit_code(), kClean) << out.output;
}

// A bug reported by a call: reported under every seed, in one child.
void expect_reported_every_seed(const Scenario& bug, const std::string& what) {
    const Outcome out = in_child([&] {
        for (int seed = 1; seed <= kSeeds; ++seed) {
            try {
                run_seed(seed, bug);
            } catch (const Reported& r) {
                std::fprintf(stderr, "seed %d reported: %s\n", seed, r.message.c_str());
                continue;
            }
            leave(kMissed, "seed " + std::to_string(seed) + ": not reported");
        }
        leave(kReported);
    });
    EXPECT_EQ(out.exit_code(), kReported) << out.output;
    int saying = 0;
    for (std::size_t at = 0; (at = out.output.find(what, at)) != std::string::npos; at += what.size()) ++saying;
    EXPECT_GE(saying, kSeeds) << out.output;
}

// A bug caught either way, depending on what the allocator did with the
// memory (deterministically, for one program): reported by a call, or the
// program stopped by the guard.
void expect_caught_every_seed(const Scenario& bug, const std::string& reported, const std::string& stopped) {
    for (int seed = 1; seed <= kSeeds; ++seed) {
        const Outcome out = in_child([&] { run_seed(seed, bug); });
        const bool caught = (out.exit_code() == kReported && out.says(reported)) || (out.aborted() && out.says(stopped));
        EXPECT_TRUE(caught) << "seed " << seed << " ended with status " << out.status << ": " << out.output;
    }
}

// A bug that stops the program: the guard's diagnostic, then abort.
void expect_stopped_every_seed(const Scenario& bug, const std::vector<std::string>& parts) {
    for (int seed = 1; seed <= kSeeds; ++seed) {
        const Outcome out = in_child([&] { run_seed(seed, bug); });
        EXPECT_TRUE(out.aborted()) << "seed " << seed << " ended with status " << out.status << ": " << out.output;
        for (const std::string& p : parts) EXPECT_TRUE(out.says(p)) << "seed " << seed << ": missing '" << p << "' in " << out.output;
    }
}

constexpr std::uint64_t kBytes = 64 * 1024;  // a heap vector, several whole pages

// ---- the host reads a copy's destination before waiting for it --------------

void read_pageable_destination(const Device& d, bool wait_first) {
    Stream s = must(Stream::create(d), "stream");
    Buffer a = must(Buffer::allocate(s, kBytes), "allocate");
    must(s.memset(a, 0x5A), "memset");
    std::vector<std::uint8_t> out(kBytes);
    HostCopy copy = must(s.copy(out, a.view()), "copy");
    if (wait_first) must(copy.wait(), "wait");
    const volatile std::uint8_t seen = out[kBytes / 2];  // the bug when not waited for
    must(copy.wait(), "wait");
    if (seen != 0x5A || !all_equal(out.data(), out.size(), 0x5A)) leave(kMissed, "read stale values");
}

TEST(CheckedHost, ReadingAVectorACopyWillWriteBeforeWaitingStopsTheProgram) {
    expect_stopped_every_seed([](const Device& d) { read_pageable_destination(d, false); },
                              {"host access to the destination of a pending device-to-host copy", "memcpy_d2h #",
                               "pageable memory", "a host thread touched", "HostCopy::wait"});
}

TEST(CheckedHost, ReadingAVectorAfterWaitingForItsCopyIsClean) {
    expect_clean_every_seed([](const Device& d) { read_pageable_destination(d, true); });
}

void read_pinned_destination(const Device& d, bool synchronize_first) {
    Stream s = must(Stream::create(d), "stream");
    Buffer a = must(Buffer::allocate(s, 4096), "allocate");
    PinnedBuffer back = must(PinnedBuffer::allocate(d, 4096), "pinned");
    must(s.memset(a, 0x33), "memset");
    must(s.copy(back, a.view()), "copy");
    if (synchronize_first) must(s.synchronize(), "synchronize");
    const volatile std::uint8_t seen = back.as<std::uint8_t>()[100];
    must(s.synchronize(), "synchronize");
    if (seen != 0x33) leave(kMissed, "read stale values");
}

TEST(CheckedHost, ReadingAPinnedBufferACopyWillWriteBeforeSynchronizingStopsTheProgram) {
    expect_stopped_every_seed([](const Device& d) { read_pinned_destination(d, false); },
                              {"host access to the destination of a pending device-to-host copy", "pinned allocation #"});
}

TEST(CheckedHost, ReadingAPinnedBufferAfterSynchronizingIsClean) {
    expect_clean_every_seed([](const Device& d) { read_pinned_destination(d, true); });
}

// ---- the next step's read-back enqueued while the host still reads ----------

void read_back_steps(const Device& d, bool enqueue_next_midway) {
    Stream s = must(Stream::create(d), "stream");
    Buffer a = must(Buffer::allocate(s, 4096), "allocate");
    PinnedBuffer back = must(PinnedBuffer::allocate(d, 4096), "pinned");
    const std::uint8_t* values = back.as<std::uint8_t>().data();
    auto enqueue_step = [&](std::uint8_t step) {
        must(s.memset(a, step), "memset");
        must(s.copy(back, a.view()), "copy");
    };
    enqueue_step(1);
    for (std::uint8_t step = 1; step <= 3; ++step) {
        must(s.synchronize(), "synchronize");
        std::uint64_t sum = 0;
        for (int i = 0; i < 2048; ++i) sum += values[i];
        if (step < 3 && enqueue_next_midway) enqueue_step(step + 1);  // the bug: the host still reads
        for (int i = 2048; i < 4096; ++i) sum += values[i];
        if (step < 3 && !enqueue_next_midway) enqueue_step(step + 1);
        if (sum != 4096u * step) leave(kMissed, "step " + std::to_string(step) + " read a mix of two steps");
    }
}

TEST(CheckedHost, EnqueueingTheNextReadBackWhileTheHostStillReadsThePinnedBufferStopsTheProgram) {
    expect_stopped_every_seed([](const Device& d) { read_back_steps(d, true); },
                              {"host access to the destination of a pending device-to-host copy", "memcpy_d2h #"});
}

TEST(CheckedHost, EnqueueingTheNextReadBackAfterTheHostReadEverythingIsClean) {
    expect_clean_every_seed([](const Device& d) { read_back_steps(d, false); });
}

// ---- the destination freed or reallocated before the copy ran ----------------

// `size` bytes: 1000 lie in at most two partial pages (no page is guarded;
// the fingerprint sees the allocator's bookkeeping), 256 KiB is mapped for
// itself and unmapped by the free.
void grow_destination(const Device& d, std::uint64_t size, bool wait_first) {
    Stream s = must(Stream::create(d), "stream");
    Buffer a = must(Buffer::allocate(s, size), "allocate");
    must(s.memset(a, 0x44), "memset");
    std::vector<std::uint8_t> out(size);
    HostCopy copy = must(s.copy(out, a.view()), "copy");
    if (wait_first) must(copy.wait(), "wait");
    // The bug without a wait: the old storage goes back to the allocator
    // (shrink_to_fit after clear frees it without reading it), and the
    // vector grows anew, maybe at the same place.
    out.clear();
    out.shrink_to_fit();
    out.resize(size * 2, 1);
    const Result<void> r = copy.wait();
    if (wait_first) {
        must(r, "wait");
        if (!all_equal(out.data(), out.size(), 1)) leave(kBroken, "the copy wrote the new storage");
        return;
    }
    expect_reported(r, "before the copy ran");
}

TEST(CheckedHost, ASmallVectorReallocatedBeforeItsCopyRanIsReportedByTheCopy) {
    SKIP_UNDER_SANITIZER_ALLOCATOR();
    expect_reported_every_seed([](const Device& d) { grow_destination(d, 1000, false); },
                               "host memory changed before the copy ran");
}

// The allocator either unmaps the old storage (the copy reports it) or
// hands its pages out again (the new owner's first write stops the program).
TEST(CheckedHost, ALargeVectorFreedBeforeItsCopyRanIsCaught) {
    SKIP_UNDER_SANITIZER_ALLOCATOR();
    expect_caught_every_seed([](const Device& d) { grow_destination(d, 256 << 10, false); }, "before the copy ran",
                             "host access to the destination of a pending device-to-host copy");
}

TEST(CheckedHost, AVectorReallocatedAfterItsCopyWasWaitedForIsClean) {
    expect_clean_every_seed([](const Device& d) {
        grow_destination(d, 1000, true);
        grow_destination(d, 256 << 10, true);
    });
}

// ---- a copy back to the host on a stream not ordered after the producer ------

void copy_back_on_other_stream(const Device& d, bool ordered) {
    Stream producer = must(Stream::create(d), "stream");
    Stream reader = must(Stream::create(d), "stream");
    Buffer a = must(Buffer::allocate(producer, kBytes), "allocate");
    must(producer.memset(a, 0x11), "memset");
    if (ordered) must(reader.order_after(producer), "order_after");
    std::vector<std::uint8_t> out(kBytes);
    Result<HostCopy> copy = reader.copy(out, a.view());
    if (!copy.ok()) expect_reported(copy.error(), "race (read after write)");
    must(copy->wait(), "wait");
    if (!all_equal(out.data(), out.size(), 0x11)) leave(kMissed, "read what the producer had not written yet");
    if (!ordered) leave(kMissed, "not reported");
}

TEST(CheckedHost, ACopyBackToTheHostOnAStreamNotOrderedAfterTheProducerIsARaceEveryRun) {
    expect_reported_every_seed([](const Device& d) { copy_back_on_other_stream(d, false); },
                               "race (read after write)");
}

TEST(CheckedHost, ACopyBackToTheHostOrderedAfterTheProducerIsClean) {
    expect_clean_every_seed([](const Device& d) { copy_back_on_other_stream(d, true); });
}

// ---- a host function that reads pinned memory freed too early ---------------

void host_function_reads_pinned(const Device& d, bool event_after_function) {
    Stream s = must(Stream::create(d), "stream");
    Event before = must(Event::create(d), "event");
    PinnedBuffer staging = must(PinnedBuffer::allocate(d, 4096), "pinned");
    staging.as<std::uint8_t>()[0] = 9;
    if (!event_after_function) must(before.record(s), "record");  // the bug: recorded before the function
    const std::uint8_t* p = staging.as<std::uint8_t>().data();
    auto seen = std::make_shared<std::uint8_t>(0);
    must(s.enqueue_host_func([p, seen] { *seen = *p; }), "host function");
    if (event_after_function) must(before.record(s), "record");
    must(before.synchronize(), "event synchronize");
    { PinnedBuffer gone = std::move(staging); }  // freed: the function may still be queued
    must(s.synchronize(), "synchronize");
    if (*seen != 9) leave(kMissed, "the host function read freed memory");
}

TEST(CheckedHost, AHostFunctionReadingPinnedMemoryFreedAfterAnEarlierEventStopsTheProgramEveryRun) {
    expect_stopped_every_seed([](const Device& d) { host_function_reads_pinned(d, false); },
                              {"use after free of pinned memory", "a host function of stream"});
}

TEST(CheckedHost, AHostFunctionReadingPinnedMemoryFreedAfterAnEventAfterItIsClean) {
    expect_clean_every_seed([](const Device& d) { host_function_reads_pinned(d, true); });
}

}  // namespace
}  // namespace keel
