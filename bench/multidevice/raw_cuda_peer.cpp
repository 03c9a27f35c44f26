// The raw CUDA reference for keel_peer_copy_bench on two GPUs: the same
// copies called directly on the CUDA runtime (cudaMemcpyAsync on device 0,
// cudaMemcpyPeerAsync from device 0 to device 1 with peer access enabled
// where the pair allows it), timed the same way. Without two GPUs it says so
// and exits 0. Usage: keel_raw_cuda_peer_bench [--quick]
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>

namespace {

bool ok(cudaError_t e, const char* what) {
    if (e == cudaSuccess) return true;
    std::fprintf(stderr, "keel_raw_cuda_peer_bench: %s: %s\n", what, cudaGetErrorString(e));
    return false;
}

double gbps(void* dst, int dst_dev, const void* src, int src_dev, size_t bytes, int iters, int reps, cudaStream_t s) {
    std::vector<double> runs;
    for (int r = 0; r < reps; ++r) {
        const auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < iters; ++i) {
            if (dst_dev == src_dev) (void)cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, s);
            else (void)cudaMemcpyPeerAsync(dst, dst_dev, src, src_dev, bytes, s);
        }
        (void)cudaStreamSynchronize(s);
        const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        runs.push_back(static_cast<double>(bytes) * iters / t / 1e9);
    }
    std::sort(runs.begin(), runs.end());
    return runs[runs.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
    const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count < 2) {
        std::printf("keel_raw_cuda_peer_bench: needs two GPUs (found %d): nothing measured\n", count);
        return 0;
    }
    int can = 0;
    (void)cudaDeviceCanAccessPeer(&can, 1, 0);
    if (can) {
        (void)cudaSetDevice(1);
        (void)cudaDeviceEnablePeerAccess(0, 0);
    }
    const size_t max_bytes = quick ? (1u << 20) : (64u << 20);
    void* src = nullptr;
    void* same = nullptr;
    void* dst = nullptr;
    cudaStream_t s0 = nullptr, s1 = nullptr;
    if (!ok(cudaSetDevice(0), "cudaSetDevice(0)") || !ok(cudaMalloc(&src, max_bytes), "cudaMalloc") ||
        !ok(cudaMalloc(&same, max_bytes), "cudaMalloc") || !ok(cudaStreamCreate(&s0), "cudaStreamCreate") ||
        !ok(cudaSetDevice(1), "cudaSetDevice(1)") || !ok(cudaMalloc(&dst, max_bytes), "cudaMalloc") ||
        !ok(cudaStreamCreate(&s1), "cudaStreamCreate"))
        return 1;
    std::printf("peer access 1->0: %s\n", can ? "yes" : "no");
    std::printf("%-10s %12s %12s %18s\n", "bytes", "same GB/s", "peer GB/s", "peer / same device");
    for (size_t bytes = quick ? max_bytes : (1u << 16); bytes <= max_bytes; bytes *= 16) {
        const int iters = quick ? 2 : static_cast<int>(std::max<size_t>(4, (256u << 20) / bytes));
        const int reps = quick ? 1 : 5;
        (void)cudaSetDevice(0);
        const double a = gbps(same, 0, src, 0, bytes, iters, reps, s0);
        (void)cudaSetDevice(1);
        const double b = gbps(dst, 1, src, 0, bytes, iters, reps, s1);
        std::printf("%-10zu %12.2f %12.2f %18.2f\n", bytes, a, b, b / a);
    }
    return 0;
}
