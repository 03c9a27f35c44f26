// Host cost of one enqueue call, keel vs raw CUDA: a small pinned copy, an
// event record and an empty kernel launch. Timed over batches of calls
// without synchronising inside a batch (so the GPU never gates the host),
// synchronised between batches (so queues never fill up).
#include "benchmarks.hpp"

#include "raw_cuda.hpp"

#include <functional>

namespace keel::bench {

namespace {

constexpr int kBatch = 100;
constexpr uint64_t kCopyBytes = 64;

// Median nanoseconds per call of `keel_call` and `raw_call`, interleaved by batch.
OverheadRow compare(std::string name, int batches, const std::function<void()>& keel_call,
                    const std::function<void()>& keel_sync, const std::function<void()>& raw_call,
                    const std::function<void()>& raw_sync) {
    auto batch_ns = [](const std::function<void()>& call, const std::function<void()>& sync) {
        const Clock::time_point t0 = Clock::now();
        for (int i = 0; i < kBatch; ++i) call();
        const double ns = seconds_between(t0, Clock::now()) * 1e9 / kBatch;
        sync();
        return ns;
    };
    for (int w = 0; w < 5; ++w) {  // warm-up: lazy module loading, caches
        (void)batch_ns(keel_call, keel_sync);
        (void)batch_ns(raw_call, raw_sync);
    }
    std::vector<double> keel_ns;
    std::vector<double> raw_ns;
    for (int b = 0; b < batches; ++b) {
        if (b % 2 == 0) {
            keel_ns.push_back(batch_ns(keel_call, keel_sync));
            raw_ns.push_back(batch_ns(raw_call, raw_sync));
        } else {
            raw_ns.push_back(batch_ns(raw_call, raw_sync));
            keel_ns.push_back(batch_ns(keel_call, keel_sync));
        }
    }
    return {std::move(name), median(keel_ns), median(raw_ns)};
}

}  // namespace

std::vector<OverheadRow> measure_overhead(const Setup& s) {
    const keel_plugin_api& api = s.keel.api();
    const int batches = s.quick ? 20 : 300;

    keel_stream ks = nullptr;
    keel_event ke = nullptr;
    keel_device_addr kdev = 0;
    void* khost = nullptr;
    must(api.stream_create(s.device, 0, &ks), "keel stream_create");
    must(api.event_create(s.device, KEEL_EVENT_DEFAULT, &ke), "keel event_create");
    must(api.device_alloc(s.device, kCopyBytes, &kdev), "keel device_alloc");
    must(api.host_alloc(s.device, kCopyBytes, &khost), "keel host_alloc");
    const keel_kernel noop = s.keel.kernel(s.device, "noop");
    keel_launch_args no_args{};
    no_args.struct_size = KEEL_LAUNCH_ARGS_STRUCT_SIZE;
    no_args.arg_struct_size = sizeof(keel_kernel_arg);

    cudaStream_t rs = nullptr;
    cudaEvent_t re = nullptr;
    void* rdev = nullptr;
    void* rhost = nullptr;
    must_cuda(cudaSetDevice(s.cuda_ordinal), "cudaSetDevice");
    must_cuda(cudaStreamCreateWithFlags(&rs, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    must_cuda(cudaEventCreateWithFlags(&re, cudaEventDisableTiming), "cudaEventCreateWithFlags");
    must_cuda(cudaMalloc(&rdev, kCopyBytes), "cudaMalloc");
    must_cuda(cudaHostAlloc(&rhost, kCopyBytes, cudaHostAllocPortable), "cudaHostAlloc");

    auto keel_sync = [&] { must(api.stream_synchronize(ks), "keel stream_synchronize"); };
    auto raw_sync = [&] { must_cuda(cudaStreamSynchronize(rs), "cudaStreamSynchronize"); };

    std::vector<OverheadRow> rows;
    rows.push_back(compare(
        "memcpy_h2d enqueue, 64 B pinned", batches,
        [&] {
            if (keel_error* e = api.memcpy_h2d(ks, kdev, khost, kCopyBytes)) must(e, "keel memcpy_h2d");
        },
        keel_sync,
        [&] {
            cudaError_t e = cudaMemcpyAsync(rdev, rhost, kCopyBytes, cudaMemcpyHostToDevice, rs);
            if (e != cudaSuccess) must_cuda(e, "cudaMemcpyAsync");
        },
        raw_sync));
    rows.push_back(compare(
        "event_record (no timing)", batches,
        [&] {
            if (keel_error* e = api.event_record(ke, ks)) must(e, "keel event_record");
        },
        keel_sync,
        [&] {
            cudaError_t e = cudaEventRecord(re, rs);
            if (e != cudaSuccess) must_cuda(e, "cudaEventRecord");
        },
        raw_sync));
    rows.push_back(compare(
        "kernel_launch, empty kernel", batches,
        [&] {
            if (keel_error* e = api.kernel_launch(ks, noop, &no_args)) must(e, "keel kernel_launch");
        },
        keel_sync,
        [&] {
            cudaError_t e = raw_launch_empty(rs);
            if (e != cudaSuccess) must_cuda(e, "empty<<<>>>");
        },
        raw_sync));

    must(api.host_free(s.device, khost), "keel host_free");
    must(api.device_free(s.device, kdev), "keel device_free");
    must(api.event_destroy(ke), "keel event_destroy");
    must(api.stream_destroy(ks), "keel stream_destroy");
    must_cuda(cudaFreeHost(rhost), "cudaFreeHost");
    must_cuda(cudaFree(rdev), "cudaFree");
    must_cuda(cudaEventDestroy(re), "cudaEventDestroy");
    must_cuda(cudaStreamDestroy(rs), "cudaStreamDestroy");
    return rows;
}

}  // namespace keel::bench
