// A known workload traced with keel::Trace: two streams on cpu:0, each
// operation counted, so that a test can compare the trace with what was
// enqueued. Prints the expectation as JSON on stdout:
//   {"trace": <path>, "streams": {"<track name>": {"<kind>": count, ...}}}
//
//   keel_trace_workload <trace file> [--no-device-times]
#include <keel/keel.hpp>
#include <keel/trace.hpp>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

namespace {

template <class T>
T check(keel::Result<T> r, const char* step) {
    if (!r.ok()) {
        std::fprintf(stderr, "keel_trace_workload: %s: %s\n", step, r.error().message().c_str());
        std::exit(1);
    }
    if constexpr (!std::is_void_v<T>) return std::move(r).value();
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: keel_trace_workload <trace file> [--no-device-times]\n");
        return 1;
    }
    const bool device_times = !(argc > 2 && std::string(argv[2]) == "--no-device-times");
    keel::Runtime runtime = check(keel::Runtime::create(), "Runtime::create");
    keel::Device device = check(runtime.device("cpu:0"), "device");
    keel::Stream a = check(keel::Stream::create(device), "Stream::create a");
    keel::Stream b = check(keel::Stream::create(device), "Stream::create b");
    keel::Kernel fill = check(keel::Kernel::find(device, "fill"), "Kernel::find fill");

    keel::TraceOptions options;
    options.path = argv[1];
    options.device_times = device_times;
    keel::Trace trace = check(keel::Trace::start(options), "Trace::start");
    std::map<std::string, std::map<std::string, int>> expected;
    auto& ea = expected["a"];
    auto& eb = expected["b"];

    const std::uint64_t n = 4096;
    keel::Buffer x = check(keel::Buffer::allocate(a, n * sizeof(float)), "allocate x");
    keel::Buffer y = check(keel::Buffer::allocate(a, n * sizeof(float)), "allocate y");
    ea["alloc"] += 2;
    std::vector<float> host(n, 1.0f);
    for (int i = 0; i < 3; ++i) check(a.copy(x, host), "copy h2d");
    ea["copy h2d"] += 3;
    check(a.copy(y, std::vector<float>(n, 2.0f)), "copy h2d moved");
    ea["copy h2d"] += 1;
    check(a.memset(y, 0), "memset");
    ea["memset"] += 1;
    check(a.launch(fill, keel::KernelArgs().buffer(x, KEEL_DTYPE_F32).scalar(3.0f)), "launch fill");
    ea["kernel"] += 1;
    check(a.copy(y.view(), x.view()), "copy d2d");
    ea["copy d2d"] += 1;
    keel::Event event = check(keel::Event::create(device), "Event::create");
    check(event.record(a), "record");
    ea["record event"] += 1;

    check(b.wait(event), "wait event");
    eb["wait event"] += 1;
    keel::Buffer z = check(keel::Buffer::allocate(b, n * sizeof(float)), "allocate z");
    eb["alloc"] += 1;
    for (int i = 0; i < 4; ++i) check(b.memset(z, static_cast<std::uint8_t>(i)), "memset b");
    eb["memset"] += 4;
    check(b.enqueue_host_func(keel::HostFunc([] {})), "host func");
    eb["host function"] += 1;
    check(x.record_stream(b), "record_stream");
    eb["record_stream"] += 1;
    check(b.order_after(a), "order_after");
    eb["fence"] += 0;  // the fence is recorded on a: counted below
    ea["fence"] += 1;
    eb["wait fence"] += 1;
    check(b.hold(std::move(z)), "hold");
    eb["hold"] += 1;

    std::vector<float> out = check(check(a.copy_to_vector<float>(x.view()), "copy d2h").get(), "HostFuture::get");
    ea["copy d2h"] += 1;
    if (out[0] != 3.0f) {
        std::fprintf(stderr, "keel_trace_workload: fill wrote %g, not 3\n", out[0]);
        return 1;
    }
    check(a.synchronize(), "synchronize a");
    check(b.synchronize(), "synchronize b");
    {
        keel::TraceRange range(a, "user", "my range", keel::TraceRangeInfo{16, 0, 1});
        check(a.memset(y, 1), "memset in range");
    }
    ea["range"] += 1;
    ea["memset"] += 1;
    check(a.synchronize(), "synchronize a");
    x = keel::Buffer();
    ea["free"] += 1;
    // x was used on b (record_stream): its free was pending until b's use
    // completed. Waiting for every tracked operation settles it and
    // releases the hold of z.
    check(keel::MemoryPool::shared(device), "MemoryPool::shared").synchronize();
    ea["free settled"] += 1;
    eb["hold released"] += 1;
    keel::TraceReport report = check(trace.stop(), "Trace::stop");

    const std::string name_a = "cpu:0 stream ";
    std::printf("{\"trace\": \"%s\", \"events\": %llu, \"device_times\": %s, \"streams\": {", report.path.c_str(),
                static_cast<unsigned long long>(report.events), device_times ? "true" : "false");
    bool first_stream = true;
    for (const auto& [which, kinds] : expected) {
        std::printf("%s\"%s\": {", first_stream ? "" : ", ", which.c_str());
        first_stream = false;
        bool first = true;
        for (const auto& [kind, count] : kinds) {
            if (count == 0) continue;
            std::printf("%s\"%s\": %d", first ? "" : ", ", kind.c_str(), count);
            first = false;
        }
        std::printf("}");
    }
    std::printf("}}\n");
    return 0;
}
