// lerp_bench: time the lerp and lerp_grad kernels on the workloads
// frameworks run (image batches, long rows, broadcast weights) and print, for each, the effective bandwidth (bytes that must move
// / time) and its fraction of a copy measured in the same run: a
// device-to-device copy on an accelerator, a STREAM-like multi-threaded copy
// of host memory on the CPU device (whose memory is host memory).
//
//   lerp_bench --device cuda:0 [--reps 50] [--large-mib 256]
//
// torch_lerp_bench.py prints the same table for torch.lerp.
#include <keel/keel.hpp>

#include <keel/tools/cli.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <numeric>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace {

using Dims = std::vector<std::int64_t>;

template <class T>
T check(keel::Result<T> r, const std::string& step) {
    if (!r.ok()) {
        std::fprintf(stderr, "lerp_bench: %s failed: %s: %s\n", step.c_str(),
                     keel::status_name(r.error().code()), r.error().message().c_str());
        std::exit(1);
    }
    if constexpr (!std::is_void_v<T>) return std::move(r).value();
}

std::int64_t numel(const Dims& d) {
    return std::accumulate(d.begin(), d.end(), std::int64_t{1}, std::multiplies<>());
}

std::size_t dtype_bytes(keel_dtype d) { return d == KEEL_DTYPE_F64 ? 8 : d == KEEL_DTYPE_F32 ? 4 : 2; }
const char* dtype_label(keel_dtype d) {
    switch (d) {
        case KEEL_DTYPE_F16: return "f16";
        case KEEL_DTYPE_BF16: return "bf16";
        case KEEL_DTYPE_F32: return "f32";
        default: return "f64";
    }
}

// One workload: shapes of x and y, the weight's shape (nullopt: a scalar).
struct Case {
    std::string label;
    Dims x, y;
    std::optional<Dims> w;
    keel_dtype dtype;
};

// Times `enqueue` (which enqueues one run on `stream`): median over `reps`
// runs, timed by device events where the device has them, else by the
// host clock around the run and a synchronize.
class Timer {
public:
    Timer(const keel::Device& device, const keel::Stream& stream, int reps)
        : device_(device), stream_(stream), reps_(reps) {}

    double median_us(const std::function<void()>& enqueue) const {
        for (int i = 0; i < 3; ++i) enqueue();  // warm-up: caches, lazily started threads
        check(stream_.synchronize(), "warm-up");
        std::vector<double> us;
        const bool events = device_.has(keel::DeviceCapability::event_timing);
        for (int i = 0; i < reps_; ++i) {
            if (events) {
                const keel::Event start = check(keel::Event::create(device_, keel::EventTiming::on), "event");
                const keel::Event end = check(keel::Event::create(device_, keel::EventTiming::on), "event");
                check(start.record(stream_), "event record");
                enqueue();
                check(end.record(stream_), "event record");
                check(end.synchronize(), "event synchronize");
                us.push_back(1e3 * check(keel::Event::elapsed_ms(start, end), "elapsed time"));
            } else {
                const auto t0 = std::chrono::steady_clock::now();
                enqueue();
                check(stream_.synchronize(), "synchronize");
                us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
            }
        }
        std::sort(us.begin(), us.end());
        return us[us.size() / 2];
    }

private:
    const keel::Device& device_;
    const keel::Stream& stream_;
    int reps_;
};

// Bandwidth of a STREAM-like copy of host memory (the CPU device's memory
// is host memory): memcpy split over 1 and over all cores, the better of
// the two (on a shared machine one thread may copy faster than all).
struct HostCopy {
    double gbs = 0;
    unsigned threads = 1;
};

HostCopy host_copy(std::size_t bytes, int reps) {
    std::vector<std::byte> src(bytes, std::byte{1}), dst(bytes, std::byte{2});
    const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    HostCopy best;
    for (unsigned threads : {1u, cores}) {
        const auto copy = [&] {
            std::vector<std::thread> pool;
            const std::size_t part = (bytes / threads + 63) / 64 * 64;
            for (unsigned t = 1; t < threads; ++t) {
                const std::size_t begin = std::min(bytes, t * part), end = std::min(bytes, begin + part);
                pool.emplace_back([&, begin, end] { std::memcpy(dst.data() + begin, src.data() + begin, end - begin); });
            }
            std::memcpy(dst.data(), src.data(), std::min(bytes, part));
            for (std::thread& t : pool) t.join();
        };
        copy();
        for (int i = 0; i < reps; ++i) {
            const auto t0 = std::chrono::steady_clock::now();
            copy();
            const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
            const double gbs = 2.0 * static_cast<double>(bytes) / us / 1e3;
            if (gbs > best.gbs) best = {gbs, threads};
        }
        if (cores == 1) break;
    }
    return best;
}

void print_row(const std::string& label, const char* op, keel_dtype dtype, double us, double bytes,
               double copy_gbs, const std::string& note = "") {
    const double gbs = bytes / us / 1e3;
    std::printf("%-44s %-10s %-5s %10.2f %9.1f %6.1f%s\n", label.c_str(), op, dtype_label(dtype), us, gbs,
                100.0 * gbs / copy_gbs, note.c_str());
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"lerp_bench: times keel's lerp and lerp_grad kernels against a copy of the same bytes\n"
                 "measured in the same run (the ratio is the figure).",
                 "lerp_bench"};
    keel::cli::show_defaults(app);
    std::string device_name = "cpu:0";
    int reps = 20;
    std::int64_t large_mib = 256;
    app.add_option("--device", device_name, "Device to run on");
    app.add_option("--reps", reps, "Timed runs per kernel (median reported)")->check(CLI::Range(1, 100'000));
    app.add_option("--large-mib", large_mib, "MiB of x (and of y, out) in the scalar-weight case")
        ->check(CLI::Range(std::int64_t{1}, std::int64_t{64} << 10));
    if (const std::optional<int> code = keel::cli::parse(app, argc, argv)) return *code;

    keel::Runtime runtime = check(keel::Runtime::create(), "loading the plugins");
    keel::Device device = check(runtime.device(device_name), "finding the device");
    keel::Stream stream = check(keel::Stream::create(device), "creating a stream");
    const keel::Kernel lerp = check(keel::Kernel::find(device, "lerp"), "finding kernel lerp");
    const keel::Kernel lerp_grad = check(keel::Kernel::find(device, "lerp_grad"), "finding kernel lerp_grad");
    const Timer timer(device, stream, reps);
    const bool host_memory = device.type() == "cpu";

    std::printf("lerp_bench  device: %s (%s, %u compute units)  reps: %d (median)\n", device.name().c_str(),
                device.properties().name.c_str(), device.properties().compute_units, reps);
    double copy_gbs = 0;
    const std::uint64_t copy_bytes = std::uint64_t{1} << 30;
    if (host_memory) {
        const HostCopy hc = host_copy(copy_bytes / 4, std::max(reps, 5));
        copy_gbs = hc.gbs;
        std::printf("copy baseline: %.1f GB/s (STREAM-like memcpy of 256 MiB of host memory, best on %u thread%s, same run)\n",
                    copy_gbs, hc.threads, hc.threads == 1 ? "" : "s");
    } else {
        const keel::Buffer src = check(keel::Buffer::allocate(stream, copy_bytes), "allocating");
        const keel::Buffer dst = check(keel::Buffer::allocate(stream, copy_bytes), "allocating");
        check(stream.memset(src, 1), "memset");
        const double us = timer.median_us([&] { check(stream.copy(dst, src), "copy"); });
        copy_gbs = 2.0 * static_cast<double>(copy_bytes) / us / 1e3;
        std::printf("copy baseline: %.1f GB/s (device-to-device copy of 1024 MiB, same run)\n", copy_gbs);
    }
    std::printf("%-44s %-10s %-5s %10s %9s %6s\n", "case", "op", "dtype", "time_us", "GB/s", "%copy");

    const std::int64_t large = large_mib * 1024 * 1024 / 4;
    const std::vector<Case> cases{
        {"x,y,w [16,102400]", {16, 102400}, {16, 102400}, Dims{16, 102400}, KEEL_DTYPE_F32},
        {"x,y,w [16,204800]", {16, 204800}, {16, 204800}, Dims{16, 204800}, KEEL_DTYPE_F64},
        {"x [16,1,1,1] y [16,3,244,244] w [3,1,244]", {16, 1, 1, 1}, {16, 3, 244, 244}, Dims{3, 1, 244}, KEEL_DTYPE_F32},
        {"x,y [" + std::to_string(large) + "] w scalar", {large}, {large}, std::nullopt, KEEL_DTYPE_F32},
    };
    for (const Case& c : cases) {
        const std::size_t es = dtype_bytes(c.dtype);
        const Dims w_shape = c.w ? *c.w : Dims{};
        Dims out_shape = c.y;  // every case broadcasts to y's shape
        const auto bytes_of = [&](const Dims& d) { return static_cast<std::uint64_t>(numel(d)) * es; };
        const auto alloc = [&](const Dims& d, const char* what) {
            keel::Buffer b = check(keel::Buffer::allocate(stream, bytes_of(d)), std::string("allocating ") + what);
            check(stream.memset(b.view(), 0x3c), "memset");  // 0x3c3c...: a normal float in every dtype
            return b;
        };
        const keel::Buffer x = alloc(c.x, "x"), y = alloc(c.y, "y"), out = alloc(out_shape, "out");
        const keel::Buffer dx = alloc(c.x, "dx"), dy = alloc(c.y, "dy");
        std::optional<keel::Buffer> w;
        if (c.w) w = alloc(*c.w, "w");
        const auto add_weight = [&](keel::KernelArgs& a) -> keel::KernelArgs& {
            return w ? a.buffer(w->view(), c.dtype) : a.scalar(0.3);
        };
        const double w_bytes = c.w ? static_cast<double>(bytes_of(*c.w)) : 0.0;

        keel::KernelArgs fwd;
        fwd.buffer(x.view(), c.dtype).buffer(y.view(), c.dtype);
        add_weight(fwd).buffer(out.view(), c.dtype).ints(c.x).ints(c.y).ints(w_shape).ints(out_shape);
        const double t_fwd = timer.median_us([&] { check(stream.launch(lerp, fwd), "launching lerp"); });
        print_row(c.label, "lerp", c.dtype, t_fwd,
                  static_cast<double>(bytes_of(c.x) + bytes_of(c.y) + bytes_of(out_shape)) + w_bytes, copy_gbs);

        keel::KernelArgs bwd;
        bwd.absent(c.dtype).absent(c.dtype);
        add_weight(bwd).buffer(out.view(), c.dtype).buffer(dx.view(), c.dtype).buffer(dy.view(), c.dtype);
        bwd.ints(c.x).ints(c.y).ints(w_shape).ints(out_shape);
        const double t_bwd = timer.median_us([&] { check(stream.launch(lerp_grad, bwd), "launching lerp_grad"); });
        const double grad_bytes = static_cast<double>(bytes_of(out_shape) + bytes_of(c.x) + bytes_of(c.y)) + w_bytes;
        print_row(c.label, "lerp_grad", c.dtype, t_bwd, grad_bytes, copy_gbs);

        if (numel(c.x) != numel(out_shape)) {
            // The same bytes moved by an elementwise pass: read dout, write
            // one gradient of dout's shape (lerp_grad with a scalar weight,
            // no broadcast, dx absent).
            const Dims flat{numel(out_shape)};
            keel::KernelArgs elem;
            elem.absent(c.dtype).absent(c.dtype).scalar(0.3).buffer(out.view(), c.dtype).absent(c.dtype);
            elem.buffer(dy.view(), c.dtype).ints(flat).ints(flat).ints(Dims{}).ints(flat);
            const double t_elem = timer.median_us([&] { check(stream.launch(lerp_grad, elem), "launching lerp_grad"); });
            char note[64];
            std::snprintf(note, sizeof note, "   (broadcast-reduce / this: %.2fx)", t_bwd / t_elem);
            print_row("  elementwise pass over the same bytes", "lerp_grad", c.dtype, t_elem,
                      static_cast<double>(2 * bytes_of(out_shape)), copy_gbs, note);
        }
    }
    return 0;
}
