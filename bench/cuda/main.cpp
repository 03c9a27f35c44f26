// keel-cuda-bench: keel's CUDA path against the same operations called
// directly on CUDA, in one run. See plugins/cuda/README.md ("Benchmarks").
#include "benchmarks.hpp"
#include "keel_cuda.hpp"
#include "report.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

void usage() {
    std::printf(
        "usage: keel-cuda-bench [--device N] [--quick]\n"
        "  Compares keel's CUDA plugin (through its C ABI) with direct CUDA runtime calls:\n"
        "  pinned copy bandwidth, per-call enqueue overhead, cross-stream fence latency.\n"
        "  --device N  the GPU to use (keel's cuda:N, CUDA ordinal N; default 0)\n"
        "  --quick     fewer repetitions: a smoke run, not numbers to report\n"
        "  KEEL_CUDA_PLUGIN=/path/libkeel_cuda.so overrides where the plugin is loaded from.\n");
}

}  // namespace

int main(int argc, char** argv) {
    using namespace keel::bench;
    uint32_t index = 0;
    bool quick = false;
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--device") == 0 && i + 1 < argc) {
            index = static_cast<uint32_t>(std::strtoul(argv[++i], nullptr, 10));
        } else if (std::strcmp(argv[i], "--quick") == 0) {
            quick = true;
        } else {
            usage();
            return std::strcmp(argv[i], "--help") == 0 ? 0 : 2;
        }
    }

    std::string error;
    std::unique_ptr<KeelCuda> keel = KeelCuda::load(&error);
    if (!keel) {
        std::fprintf(stderr, "keel-cuda-bench: cannot load the CUDA plugin: %s\n", error.c_str());
        return 1;
    }
    const uint32_t count = keel->device_count();
    if (count == 0) {
        std::printf("keel-cuda-bench: no CUDA device, nothing to measure.\n  %s reports: %s\n",
                    keel->path().c_str(), keel->status().c_str());
        return 0;
    }
    if (index >= count) {
        std::fprintf(stderr, "keel-cuda-bench: no device cuda:%u (%u device(s))\n", index, count);
        return 2;
    }
    int raw_count = 0;
    must_cuda(cudaGetDeviceCount(&raw_count), "cudaGetDeviceCount");
    if (static_cast<uint32_t>(raw_count) != count) {
        std::fprintf(stderr, "keel-cuda-bench: keel sees %u CUDA device(s), the CUDA runtime %d: cannot pair them\n",
                     count, raw_count);
        return 1;
    }

    const keel_device device = keel->device(index);
    keel_device_properties props{};
    props.struct_size = KEEL_DEVICE_PROPERTIES_STRUCT_SIZE;
    must(keel->api().device_properties(device, &props), "device_properties");
    int driver = 0;
    int runtime = 0;
    (void)cudaDriverGetVersion(&driver);
    (void)cudaRuntimeGetVersion(&runtime);
    std::printf("keel-cuda-bench: keel's CUDA plugin (C ABI) vs direct CUDA runtime calls, same process\n");
    std::printf("device cuda:%u: %s, %u SMs, %.1f GiB; driver CUDA %d.%d, runtime %d.%d%s\n", index, props.name,
                props.compute_units, static_cast<double>(props.total_memory) / (1ull << 30), driver / 1000,
                driver % 1000 / 10, runtime / 1000, runtime % 1000 / 10, quick ? "; --quick run" : "");
    std::fflush(stdout);

    const Setup setup{*keel, device, static_cast<int>(index), quick};
    int missed = 0;
    missed += print_bandwidth("pinned host -> device bandwidth", measure_bandwidth(setup, Direction::host_to_device));
    std::fflush(stdout);
    missed += print_bandwidth("pinned device -> host bandwidth", measure_bandwidth(setup, Direction::device_to_host));
    std::fflush(stdout);
    missed += print_overhead(measure_overhead(setup));
    std::fflush(stdout);
    print_fence(measure_fence(setup));
    std::printf("\n%s\n", missed == 0 ? "all goals met" : (std::to_string(missed) + " goal(s) missed").c_str());
    return 0;
}
