// A deterministic in-process device for testing the memory machinery.
//
// Streams are queues of operations that complete only when the test says so
// (complete(), complete_all()) or, in immediate mode, at once. Events and
// stream waits follow the C ABI's rules. Every device access is checked
// against unfinished accesses of other streams that it is not ordered after
// (vector clocks over events and waits): such a hazard, a device_free of
// memory an unfinished operation touches, or a host wait on a stuck stream
// is recorded as a violation, so a test fails if the allocator reuses or
// frees a block too early. Thread-safe (one lock).
#pragma once

#include "memory/device_ops.hpp"

#include <keel/memory_config.hpp>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace keel::memory::testing {

// A memory config without the background reclaimer: tests sweep explicitly.
inline MemoryConfig quiet_config() {
    MemoryConfig config;
    config.reclaim_interval = std::chrono::microseconds{0};
    return config;
}

class FakeDevice final : public DeviceOps {
public:
    struct Options {
        std::uint64_t capacity = 1ull << 30;
        std::uint64_t alignment = 256;
        bool immediate = false;    // operations complete when enqueued
        bool pinned = true;        // has host_alloc
        bool inline_copy = true;   // has memcpy_h2d_inline
        // A late device_free is refused (FAILED_PRECONDITION, memory kept)
        // instead of recorded, like the CPU plugin's checker in error mode.
        bool refuse_late_free = false;
        // host_alloc fails (OUT_OF_MEMORY) once this many blocks are live:
        // pinned memory running out.
        std::uint64_t max_live_host_blocks = UINT64_MAX;
        // event_query fails (DEVICE_ERROR) although the work goes on: a
        // query that fails must never be taken for completion.
        bool failing_event_query = false;
        // A plugin's bounded staging of pageable memory: a memcpy_h2d/d2h
        // whose host pointer is not a host_alloc block is refused
        // (OUT_OF_MEMORY, nothing enqueued) while this many such copies are
        // unfinished on all streams together.
        std::uint64_t max_pageable_copies_in_flight = UINT64_MAX;
    };
    explicit FakeDevice(Options options);
    FakeDevice() : FakeDevice(Options{}) {}
    ~FakeDevice() override;

    // ---- test control ----------------------------------------------------
    keel_stream make_stream();
    // Completes up to `n` operations of `stream` in order (stops at a wait
    // whose event is not complete yet, or if the stream is stuck).
    void complete(keel_stream stream, std::size_t n = SIZE_MAX);
    // Completes everything that can complete, on every stream.
    void complete_all();
    void set_stuck(keel_stream stream, bool stuck);
    // A kernel that reads and writes [addr, addr + size): checked for hazards.
    void enqueue_access(keel_stream stream, keel_device_addr addr, std::uint64_t size);
    // A kernel that touches no memory (just takes a place in the stream).
    void enqueue_work(keel_stream stream);
    [[nodiscard]] std::size_t unfinished(keel_stream stream);
    [[nodiscard]] std::vector<std::string> violations();
    void clear_violations();
    // Direct access to device bytes (test oracle only).
    [[nodiscard]] std::vector<std::uint8_t> read(keel_device_addr addr, std::uint64_t size);

    struct Counters {
        std::uint64_t device_allocs = 0, device_frees = 0, live_device_bytes = 0;
        std::uint64_t host_allocs = 0, host_frees = 0;
        std::uint64_t events_created = 0, events_live = 0, event_records = 0;
        std::uint64_t stream_waits = 0, h2d = 0, d2h = 0, inline_h2d = 0, host_syncs = 0;
        std::uint64_t refused_pageable_copies = 0;
    };
    [[nodiscard]] Counters counters();

    // ---- DeviceOps ---------------------------------------------------------
    std::uint64_t alloc_alignment() const noexcept override { return options_.alignment; }
    std::uint64_t total_memory() const noexcept override { return options_.capacity; }
    bool has_pinned_host_memory() const noexcept override { return options_.pinned; }
    bool has_inline_copy() const noexcept override { return options_.inline_copy; }
    Result<keel_device_addr> device_alloc(std::uint64_t size) override;
    Result<void> device_free(keel_device_addr addr) override;
    Result<void*> host_alloc(std::uint64_t size) override;
    Result<void> host_free(void* ptr) override;
    Result<keel_event> event_create() override;
    Result<void> event_destroy(keel_event event) override;
    Result<void> event_record(keel_event event, keel_stream stream) override;
    Result<bool> event_query(keel_event event) override;
    Result<void> event_synchronize(keel_event event) override;
    Result<void> stream_wait_event(keel_stream stream, keel_event event) override;
    Result<void> stream_synchronize(keel_stream stream) override;
    Result<bool> stream_query(keel_stream stream) override;
    Result<void> memcpy_h2d(keel_stream stream, keel_device_addr dst, const void* src,
                            std::uint64_t size) override;
    Result<void> memcpy_d2h(keel_stream stream, void* dst, keel_device_addr src,
                            std::uint64_t size) override;
    Result<void> memcpy_h2d_inline(keel_stream stream, keel_device_addr dst, const void* src,
                                   std::uint64_t size) override;

private:
    struct Stream;
    using Clock = std::unordered_map<const Stream*, std::size_t>;
    enum class OpKind { access, wait, h2d, d2h, h2d_inline, marker };
    struct Op {
        OpKind kind = OpKind::marker;
        keel_device_addr lo = 0, hi = 0;
        const void* src = nullptr;
        void* dst = nullptr;
        std::vector<std::uint8_t> inline_bytes;
        const Stream* wait_stream = nullptr;  // for waits
        std::size_t wait_position = 0;
        bool pageable = false;  // h2d/d2h with host memory not from host_alloc
    };
    struct Stream {
        std::vector<Op> ops;
        std::size_t completed = 0;
        bool stuck = false;
        Clock clock;  // for each other stream: ops known to finish before our next op
    };
    struct Event {
        const Stream* stream = nullptr;  // null: never recorded (complete)
        std::size_t position = 0;        // complete when stream->completed >= position
        Clock clock;
    };

    Stream* stream_of(keel_stream s);
    Event* event_of(keel_event e);
    bool complete_locked(Stream& s, std::size_t target, bool cascade);
    void execute(Op& op);
    void enqueue(Stream& s, Op op);
    void check_hazards(const Stream& s, keel_device_addr lo, keel_device_addr hi);
    std::uint8_t* bytes_at(keel_device_addr addr, std::uint64_t size);
    bool event_done(const Event& e) const;
    // Refuses a pageable copy when the staging bound is reached.
    Result<void> stage_pageable(Op& op, const void* host);

    const Options options_;
    std::mutex mu_;
    std::vector<std::unique_ptr<Stream>> streams_;
    std::unordered_map<const void*, std::unique_ptr<Event>> events_;
    std::map<keel_device_addr, std::vector<std::uint8_t>> allocations_;  // addr -> bytes
    std::unordered_map<void*, std::unique_ptr<std::uint8_t[]>> host_blocks_;
    keel_device_addr next_addr_ = 0x10000000;
    std::vector<std::string> violations_;
    Counters counters_;
};

}  // namespace keel::memory::testing
