// Cross-stream fence round trip: work on stream A, record an event on A,
// stream B waits for it, B runs its next operation, the host waits for B.
// Latency of the whole chain, keel vs raw CUDA.
#include "benchmarks.hpp"

#include "raw_cuda.hpp"

namespace keel::bench {

FenceResult measure_fence(const Setup& s) {
    const keel_plugin_api& api = s.keel.api();
    const int blocks = s.quick ? 4 : 40;
    constexpr int kPerBlock = 50;

    keel_stream ka = nullptr;
    keel_stream kb = nullptr;
    keel_event ke = nullptr;
    must(api.stream_create(s.device, 0, &ka), "keel stream_create");
    must(api.stream_create(s.device, 0, &kb), "keel stream_create");
    must(api.event_create(s.device, KEEL_EVENT_DEFAULT, &ke), "keel event_create");
    const keel_kernel noop = s.keel.kernel(s.device, "noop");
    keel_launch_args no_args{};
    no_args.struct_size = KEEL_LAUNCH_ARGS_STRUCT_SIZE;
    no_args.arg_struct_size = sizeof(keel_kernel_arg);

    cudaStream_t ra = nullptr;
    cudaStream_t rb = nullptr;
    cudaEvent_t re = nullptr;
    must_cuda(cudaSetDevice(s.cuda_ordinal), "cudaSetDevice");
    must_cuda(cudaStreamCreateWithFlags(&ra, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    must_cuda(cudaStreamCreateWithFlags(&rb, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    must_cuda(cudaEventCreateWithFlags(&re, cudaEventDisableTiming), "cudaEventCreateWithFlags");

    auto keel_trip = [&] {
        const Clock::time_point t0 = Clock::now();
        must(api.kernel_launch(ka, noop, &no_args), "keel kernel_launch");
        must(api.event_record(ke, ka), "keel event_record");
        must(api.stream_wait_event(kb, ke), "keel stream_wait_event");
        must(api.kernel_launch(kb, noop, &no_args), "keel kernel_launch");
        must(api.stream_synchronize(kb), "keel stream_synchronize");
        return seconds_between(t0, Clock::now()) * 1e6;
    };
    auto raw_trip = [&] {
        const Clock::time_point t0 = Clock::now();
        must_cuda(raw_launch_empty(ra), "empty<<<>>>");
        must_cuda(cudaEventRecord(re, ra), "cudaEventRecord");
        must_cuda(cudaStreamWaitEvent(rb, re, cudaEventWaitDefault), "cudaStreamWaitEvent");
        must_cuda(raw_launch_empty(rb), "empty<<<>>>");
        must_cuda(cudaStreamSynchronize(rb), "cudaStreamSynchronize");
        return seconds_between(t0, Clock::now()) * 1e6;
    };

    for (int w = 0; w < 20; ++w) {
        (void)keel_trip();
        (void)raw_trip();
    }
    std::vector<double> keel_us;
    std::vector<double> raw_us;
    auto keel_block = [&] {
        for (int i = 0; i < kPerBlock; ++i) keel_us.push_back(keel_trip());
    };
    auto raw_block = [&] {
        for (int i = 0; i < kPerBlock; ++i) raw_us.push_back(raw_trip());
    };
    for (int b = 0; b < blocks; ++b) {
        // Alternate who goes first, so neither gets a systematic edge.
        if (b % 2 == 0) {
            keel_block();
            raw_block();
        } else {
            raw_block();
            keel_block();
        }
    }

    must(api.event_destroy(ke), "keel event_destroy");
    must(api.stream_destroy(kb), "keel stream_destroy");
    must(api.stream_destroy(ka), "keel stream_destroy");
    must_cuda(cudaEventDestroy(re), "cudaEventDestroy");
    must_cuda(cudaStreamDestroy(rb), "cudaStreamDestroy");
    must_cuda(cudaStreamDestroy(ra), "cudaStreamDestroy");
    return {median(keel_us), median(raw_us)};
}

}  // namespace keel::bench
