// keel-trace-exactness: how far a traced slice's start and end sit from
// when the stream really ran the operation. Each operation is a host
// function that reads the host's steady clock (the trace's clock) as its
// body begins and ends; the slice's start should be at or just before the
// first reading, its end at or just after the second. Two cases: a busy
// stream (every function enqueued while a blocker holds the stream) and an
// idle one (a synchronisation before each enqueue).
//
//   keel-trace-exactness [--device cpu:0] [--ops 2000]
#include <keel/keel.hpp>
#include <keel/trace.hpp>

#include <keel/tools/cli.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

namespace {

template <class T>
T must(keel::Result<T> r, const char* step) {
    if (!r.ok()) {
        std::fprintf(stderr, "keel-trace-exactness: %s: %s\n", step, r.error().message().c_str());
        std::exit(1);
    }
    if constexpr (!std::is_void_v<T>) return std::move(r).value();
}

std::int64_t steady_now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

double number_after(const std::string& text, std::size_t from, const std::string& key) {
    const std::size_t at = text.find(key, from);
    return at == std::string::npos ? -1 : std::stod(text.substr(at + key.size()));
}

// The host functions' slices (µs from the session's origin), in file order.
struct Span {
    double ts = 0;
    double end = 0;
};

std::vector<Span> host_function_slices(const std::string& text, double& origin_ns) {
    origin_ns = number_after(text, 0, "\"steady_origin_ns\":");
    std::vector<Span> out;
    std::istringstream lines(text);
    std::string line;
    while (std::getline(lines, line)) {
        if (line.find("{\"ph\":\"X\"") == std::string::npos || line.find("\"name\":\"host function\"") == std::string::npos)
            continue;
        const double ts = number_after(line, 0, "\"ts\":");
        out.push_back({ts, ts + number_after(line, 0, "\"dur\":")});
    }
    return out;
}

struct Offsets {
    std::vector<double> start;  // slice start - body's first reading (ns): > 0 sits late
    std::vector<double> end;    // slice end - body's last reading (ns): < 0 ends early
};

double quantile(std::vector<double> v, double q) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    return v[static_cast<std::size_t>(q * static_cast<double>(v.size() - 1))];
}

Offsets run_case(const keel::Device& device, int ops, bool busy, const std::string& path) {
    keel::Stream s = must(keel::Stream::create(device), "Stream::create");
    std::vector<std::int64_t> begin(static_cast<std::size_t>(ops)), end(static_cast<std::size_t>(ops));
    std::atomic<bool> go{!busy};
    keel::Trace trace = must(keel::Trace::start({path}), "Trace::start");
    if (busy) {
        must(s.enqueue_host_func(keel::HostFunc([&go] {
                 while (!go.load()) std::this_thread::sleep_for(std::chrono::microseconds(50));
             })),
             "enqueue blocker");
    }
    for (int i = 0; i < ops; ++i) {
        auto* b = &begin[static_cast<std::size_t>(i)];
        auto* e = &end[static_cast<std::size_t>(i)];
        must(s.enqueue_host_func(keel::HostFunc([b, e] {
                 *b = steady_now_ns();
                 *e = steady_now_ns();
             })),
             "enqueue");
        if (!busy) must(s.synchronize(), "synchronize");
    }
    go.store(true);
    must(s.synchronize(), "synchronize");
    must(trace.stop(), "Trace::stop");

    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    double origin_ns = 0;
    std::vector<Span> spans = host_function_slices(text.str(), origin_ns);
    std::filesystem::remove(path);
    if (busy && !spans.empty()) spans.erase(spans.begin());  // the blocker
    Offsets o;
    for (std::size_t i = 0; i < spans.size() && i < begin.size(); ++i) {
        o.start.push_back(spans[i].ts * 1000 - (static_cast<double>(begin[i]) - origin_ns));
        o.end.push_back(spans[i].end * 1000 - (static_cast<double>(end[i]) - origin_ns));
    }
    return o;
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"keel-trace-exactness: how far traced slices sit from when the stream ran them.",
                 "keel-trace-exactness"};
    keel::cli::show_defaults(app);
    std::string device_name = "cpu:0";
    int ops = 2000;
    app.add_option("--device", device_name, "Device to measure");
    app.add_option("--ops", ops, "Host functions per case")->check(CLI::Range(10, 1000000));
    if (const std::optional<int> code = keel::cli::parse(app, argc, argv)) return *code;

    keel::Runtime runtime = must(keel::Runtime::create(), "Runtime::create");
    keel::Device device = must(runtime.device(device_name), "device");
    const std::string path = (std::filesystem::temp_directory_path() /
                              ("keel-trace-exactness-" + std::to_string(::getpid()) + ".json"))
                                 .string();
    std::printf("keel-trace-exactness on %s: %d host functions per case; ns, the slice against the function's "
                "own clock readings\n",
                device.name().c_str(), ops);
    std::printf("%-12s %34s %34s\n", "stream", "start - body begin (min/med/p99/max)",
                "end - body end (min/med/p99/max)");
    for (bool busy : {true, false}) {
        const Offsets o = run_case(device, ops, busy, path);
        std::printf("%-12s %8.0f %8.0f %8.0f %8.0f %8.0f %8.0f %8.0f %8.0f\n", busy ? "busy" : "idle",
                    quantile(o.start, 0), quantile(o.start, 0.5), quantile(o.start, 0.99), quantile(o.start, 1),
                    quantile(o.end, 0), quantile(o.end, 0.5), quantile(o.end, 0.99), quantile(o.end, 1));
    }
    return 0;
}
