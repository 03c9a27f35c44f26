// keel-ordering-bench: host time of Event::record + Stream::wait on cpu:0
// before and after the process counts its first fallible host function,
// which turns on the runtime's tracking of what each stream depends on (a
// communicator's gate is one, so every process that communicates pays it).
// One process, both columns in one run: tracking stays on once on.
//
//   keel-ordering-bench [threads]   (each thread records and waits on streams of its own)
#include <keel/keel.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

namespace {

// Mean host ns of one record on `a` and one wait on `b` for it.
double record_and_wait_ns(const keel::Stream& a, const keel::Stream& b, const keel::Event& e, int n) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < n; ++i) {
        (void)e.record(a);
        (void)b.wait(e);
        if (i % 256 == 255) {
            (void)a.synchronize();
            (void)b.synchronize();
        }
    }
    (void)a.synchronize();
    (void)b.synchronize();
    return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / n;
}

// Best of five rounds on each thread, averaged over the threads.
double measure(const keel::Device& device, int threads) {
    std::vector<double> best(static_cast<std::size_t>(threads), 1e18);
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t) {
        workers.emplace_back([&, t] {
            const keel::Stream a = keel::Stream::create(device).value();
            const keel::Stream b = keel::Stream::create(device).value();
            const keel::Event e = keel::Event::create(device).value();
            (void)record_and_wait_ns(a, b, e, 2000);
            for (int round = 0; round < 5; ++round)
                best[static_cast<std::size_t>(t)] =
                    std::min(best[static_cast<std::size_t>(t)], record_and_wait_ns(a, b, e, 20000));
        });
    }
    for (std::thread& w : workers) w.join();
    double sum = 0;
    for (double b : best) sum += b;
    return sum / threads;
}

}  // namespace

int main(int argc, char** argv) {
    const int threads = argc > 1 ? std::max(1, std::atoi(argv[1])) : 1;
    const keel::Runtime runtime = keel::Runtime::create().value();
    const keel::Device device = runtime.device("cpu:0").value();
    const double off = measure(device, threads);
    const keel::Stream s = keel::Stream::create(device).value();
    (void)s.enqueue_host_func([]() -> keel::Result<void> { return {}; });  // fallible: tracking on
    (void)s.synchronize();
    const double on = measure(device, threads);
    std::printf("record+wait on cpu:0, %d thread(s): %.0f ns before the first fallible host function, "
                "%.0f ns after (%.2fx)\n",
                threads, off, on, on / off);
    return 0;
}
