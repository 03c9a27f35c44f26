// What two threads of this machine can do at all, for the staged-copy goal
// (docs/memory.md): a raw copy is two threads streaming DRAM to DRAM (the
// CPU plugin's memcpy_h2d of a large pinned buffer); a staged copy at best is
// a pipeline where one thread fills a cache-resident ring from DRAM and the
// other streams the ring out to DRAM (the host's fill and the stream's copy),
// with no keel in between. Their ratio is the ceiling of "staged vs raw".
// (The waits yield: a new thread starts on its creator's core, and two
// spinners sharing one would measure the scheduler.)
#include "stream_copy.hpp"

#include <benchmark/benchmark.h>

#include <atomic>
#include <cstddef>
#include <cstring>
#include <thread>
#include <vector>

namespace keel::cpu::bench {
namespace {

constexpr std::size_t kBytes = 256u << 20;
constexpr std::size_t kChunk = 1u << 20;
constexpr std::size_t kRing = 4;

struct Buffers {
    std::vector<std::byte> src = std::vector<std::byte>(kBytes, std::byte{1});
    std::vector<std::byte> dst = std::vector<std::byte>(kBytes, std::byte{2});
};

Buffers& buffers() {
    static Buffers b;
    return b;
}

void BM_RawCopyTwoThreadsStreaming(benchmark::State& state) {
    Buffers& b = buffers();
    auto half = [&](std::size_t begin, std::size_t end) {
        for (std::size_t o = begin; o < end; o += kChunk) copy_streaming(b.dst.data() + o, b.src.data() + o, kChunk);
    };
    for (auto _ : state) {
        std::thread other(half, 0, kBytes / 2);
        half(kBytes / 2, kBytes);
        other.join();
    }
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * kBytes));
}
BENCHMARK(BM_RawCopyTwoThreadsStreaming)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_StagedPipelineCeiling(benchmark::State& state) {
    Buffers& b = buffers();
    std::vector<std::byte> ring(kRing * kChunk, std::byte{3});
    const std::size_t chunks = kBytes / kChunk;
    for (auto _ : state) {
        std::atomic<std::size_t> filled{0}, drained{0};
        std::thread device([&] {
            for (std::size_t k = 0; k < chunks; ++k) {
                while (filled.load(std::memory_order_acquire) <= k) std::this_thread::yield();
                copy_streaming(b.dst.data() + k * kChunk, ring.data() + (k % kRing) * kChunk, kChunk);
                drained.store(k + 1, std::memory_order_release);
            }
        });
        for (std::size_t k = 0; k < chunks; ++k) {
            while (drained.load(std::memory_order_acquire) + kRing <= k) std::this_thread::yield();
            std::memcpy(ring.data() + (k % kRing) * kChunk, b.src.data() + k * kChunk, kChunk);
            filled.store(k + 1, std::memory_order_release);
        }
        device.join();
    }
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * kBytes));
}
BENCHMARK(BM_StagedPipelineCeiling)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace keel::cpu::bench
