// Pinned host<->device copy bandwidth: keel's memcpy_h2d / memcpy_d2h
// against cudaMemcpyAsync, same sizes, same kind of memory and stream.
#include "benchmarks.hpp"

#include <algorithm>
#include <cstring>

namespace keel::bench {

namespace {

constexpr uint64_t kKiB = 1024;
constexpr uint64_t kMiB = 1024 * kKiB;
constexpr uint64_t kLargest = 256 * kMiB;

// Repetitions moving about this many bytes per timed run (bounded both ways).
constexpr uint64_t kBytesPerRun = 1024 * kMiB;

std::vector<uint64_t> sizes() {
    std::vector<uint64_t> out;
    for (uint64_t b = 4 * kKiB; b <= kLargest; b *= 4) out.push_back(b);
    return out;
}

}  // namespace

std::vector<BandwidthRow> measure_bandwidth(const Setup& s, Direction direction) {
    const keel_plugin_api& api = s.keel.api();
    const bool h2d = direction == Direction::host_to_device;

    void* keel_host = nullptr;
    keel_device_addr keel_dev = 0;
    keel_stream keel_stream_ = nullptr;
    must(api.host_alloc(s.device, kLargest, &keel_host), "keel host_alloc");
    must(api.device_alloc(s.device, kLargest, &keel_dev), "keel device_alloc");
    must(api.stream_create(s.device, 0, &keel_stream_), "keel stream_create");

    void* raw_host = nullptr;
    void* raw_dev = nullptr;
    cudaStream_t raw_stream = nullptr;
    must_cuda(cudaSetDevice(s.cuda_ordinal), "cudaSetDevice");
    must_cuda(cudaHostAlloc(&raw_host, kLargest, cudaHostAllocPortable), "cudaHostAlloc");
    must_cuda(cudaMalloc(&raw_dev, kLargest), "cudaMalloc");
    must_cuda(cudaStreamCreateWithFlags(&raw_stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    std::memset(keel_host, 1, kLargest);
    std::memset(raw_host, 1, kLargest);

    auto keel_run = [&](uint64_t bytes, uint64_t reps) {
        const Clock::time_point t0 = Clock::now();
        for (uint64_t i = 0; i < reps; ++i) {
            keel_error* e = h2d ? api.memcpy_h2d(keel_stream_, keel_dev, keel_host, bytes)
                                : api.memcpy_d2h(keel_stream_, keel_host, keel_dev, bytes);
            if (e != nullptr) must(e, "keel memcpy");
        }
        must(api.stream_synchronize(keel_stream_), "keel stream_synchronize");
        return static_cast<double>(bytes * reps) / seconds_between(t0, Clock::now()) / 1e9;
    };
    auto raw_run = [&](uint64_t bytes, uint64_t reps) {
        const Clock::time_point t0 = Clock::now();
        for (uint64_t i = 0; i < reps; ++i) {
            cudaError_t e = h2d ? cudaMemcpyAsync(raw_dev, raw_host, bytes, cudaMemcpyHostToDevice, raw_stream)
                                : cudaMemcpyAsync(raw_host, raw_dev, bytes, cudaMemcpyDeviceToHost, raw_stream);
            if (e != cudaSuccess) must_cuda(e, "cudaMemcpyAsync");
        }
        must_cuda(cudaStreamSynchronize(raw_stream), "cudaStreamSynchronize");
        return static_cast<double>(bytes * reps) / seconds_between(t0, Clock::now()) / 1e9;
    };

    const int rounds = s.quick ? 2 : 7;
    std::vector<BandwidthRow> rows;
    for (uint64_t bytes : sizes()) {
        const uint64_t reps = std::clamp<uint64_t>(kBytesPerRun / bytes, 4, s.quick ? 200 : 2000);
        (void)keel_run(bytes, std::min<uint64_t>(reps, 8));  // warm-up: first-touch, clocks
        (void)raw_run(bytes, std::min<uint64_t>(reps, 8));
        BandwidthRow row{bytes, 0.0, 0.0};
        for (int r = 0; r < rounds; ++r) {
            // Alternate who goes first, so neither gets a systematic edge.
            if (r % 2 == 0) {
                row.keel_gbps = std::max(row.keel_gbps, keel_run(bytes, reps));
                row.raw_gbps = std::max(row.raw_gbps, raw_run(bytes, reps));
            } else {
                row.raw_gbps = std::max(row.raw_gbps, raw_run(bytes, reps));
                row.keel_gbps = std::max(row.keel_gbps, keel_run(bytes, reps));
            }
        }
        rows.push_back(row);
    }

    must(api.stream_destroy(keel_stream_), "keel stream_destroy");
    must(api.device_free(s.device, keel_dev), "keel device_free");
    must(api.host_free(s.device, keel_host), "keel host_free");
    must_cuda(cudaStreamDestroy(raw_stream), "cudaStreamDestroy");
    must_cuda(cudaFree(raw_dev), "cudaFree");
    must_cuda(cudaFreeHost(raw_host), "cudaFreeHost");
    return rows;
}

}  // namespace keel::bench
