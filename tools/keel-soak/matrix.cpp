#include "matrix.hpp"

#include "faults.hpp"
#include "worker.hpp"

#include <keel/base/resident.hpp>
#include <keel/keel.hpp>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

namespace soak {
namespace {

using Clock = std::chrono::steady_clock;

double rss_mib() { return static_cast<double>(keel::resident_bytes()) / (1 << 20); }

// One row of the table: a fault, over every step kind and position.
struct Row {
    unsigned cases = 0;
    unsigned errors = 0;         // the step reported an error
    unsigned intact = 0;         // the step succeeded with verified data
    unsigned mismatches = 0;     // success over wrong data
    unsigned not_recovered = 0;  // a step without the fault failed afterwards
    unsigned hangs = 0;          // past the case limit (child processes)
    unsigned crashes = 0;        // a detector aborted (child processes)
    double slowest_ms = 0;
};

// Aborts the process, naming the case, when a case outlives its bound.
class Watchdog {
public:
    explicit Watchdog(std::chrono::duration<double> limit) : limit_(limit), thread_([this] { loop(); }) {}
    ~Watchdog() {
        {
            std::lock_guard lock(mu_);
            stop_ = true;
        }
        cv_.notify_all();
        thread_.join();
    }
    Watchdog(const Watchdog&) = delete;
    Watchdog& operator=(const Watchdog&) = delete;
    void arm(std::string name) {
        std::lock_guard lock(mu_);
        name_ = std::move(name);
        deadline_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(limit_);
        armed_ = true;
        cv_.notify_all();
    }
    void disarm() {
        std::lock_guard lock(mu_);
        armed_ = false;
    }

private:
    void loop() {
        std::unique_lock lock(mu_);
        while (!stop_) {
            if (armed_ && Clock::now() >= deadline_) {
                std::fprintf(stderr, "fault matrix: hang: %s ran past %.0f s\n", name_.c_str(), limit_.count());
                std::abort();
            }
            cv_.wait_for(lock, std::chrono::milliseconds(100));
        }
    }
    const std::chrono::duration<double> limit_;
    std::mutex mu_;
    std::condition_variable cv_;
    std::string name_;
    Clock::time_point deadline_{};
    bool armed_ = false;
    bool stop_ = false;
    std::thread thread_;
};

void print_table(const std::map<std::string, Row>& rows, unsigned positions, double seconds) {
    std::printf("| fault | cases | error reported | completed, verified (absorbed or not reached) | mismatches | not recovered | hangs | "
                "detector aborts | slowest case ms |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
    Row total;
    for (const auto& [name, r] : rows) {
        std::printf("| %s | %u | %u | %u | %u | %u | %u | %u | %.0f |\n", name.c_str(), r.cases, r.errors, r.intact,
                    r.mismatches, r.not_recovered, r.hangs, r.crashes, r.slowest_ms);
        total.cases += r.cases;
        total.errors += r.errors;
        total.intact += r.intact;
        total.mismatches += r.mismatches;
        total.not_recovered += r.not_recovered;
        total.hangs += r.hangs;
        total.crashes += r.crashes;
    }
    std::printf("%u cases (%u step kinds x %zu faults x %u positions) in %.1f s: %u errors reported, %u completed "
                "and verified, %u mismatches, %u not recovered, %u hangs, %u detector aborts\n",
                total.cases, kSteps, rows.size(), positions, seconds, total.errors, total.intact, total.mismatches,
                total.not_recovered, total.hangs, total.crashes);
}

bool passed(const std::map<std::string, Row>& rows) {
    return std::all_of(rows.begin(), rows.end(), [](const auto& r) {
        return r.second.mismatches == 0 && r.second.not_recovered == 0 && r.second.hangs == 0 &&
               r.second.crashes == 0;
    });
}

// Level Zero on a driver that injects faults: every case in this process,
// the fault armed just before its step.
int driver_matrix(const MatrixOptions& o) {
    prepare_faults("level_zero");
    if (!driver_faults_available()) {
        std::fprintf(stderr, "fault matrix: the Level Zero driver in this process injects no faults "
                             "(run with ZE_ENABLE_ALT_DRIVERS naming the fake driver)\n");
        return 2;
    }
    auto created = keel::Runtime::create();
    if (!created.ok()) {
        std::fprintf(stderr, "keel-soak: %s\n", created.error().message().c_str());
        return 1;
    }
    keel::Runtime rt = std::move(created).value();
    auto device = rt.device(o.device);
    if (!device.ok()) {
        std::fprintf(stderr, "keel-soak: %s\n", device.error().message().c_str());
        return 1;
    }
    // Held for the whole matrix: statistics at the end come from the
    // instance the cases used.
    keel::MemoryPool memory = keel::MemoryPool::shared(*device).expect("the memory instance");
    const double rss_before = rss_mib();
    std::mutex shared_mu;
    std::optional<keel::Stream> shared;
    Counters counters;
    std::map<std::string, Row> rows;
    const auto started = Clock::now();
    {
        Watchdog watchdog(std::chrono::duration<double>(o.case_limit_s));
        Worker worker(*device, shared, shared_mu, counters, 7, /*faults=*/false);
        for (const DriverFault& fault : driver_faults()) {
            Row& row = rows[std::string(fault.call) + " " + fault.result_name];
            for (unsigned k = 0; k < kSteps; ++k)
                for (unsigned pos = 0; pos < o.positions; ++pos) {
                    const Step step = static_cast<Step>(k);
                    watchdog.arm(std::string(step_name(step)) + " with " + fault.call + " failing " + fault.result_name +
                                 " after " + std::to_string(pos) + " calls");
                    const auto t0 = Clock::now();
                    const std::uint64_t mismatches = counters.mismatches.load();
                    // Cold: the step creates its stream and allocates from
                    // the driver, so those calls are among the positions.
                    worker.drop_stream();
                    (void)memory.release_cached();
                    reset_driver_faults();
                    inject_driver_fault(fault, pos);
                    const bool ok = worker.step(step);
                    reset_driver_faults();
                    // Without the fault a step succeeds, on a new stream
                    // where the last one failed. A second try: the fault
                    // may have failed the shared stream (another thread's
                    // query of it met the injection), which the step that
                    // meets that error replaces.
                    const bool recovered = worker.step(step) || worker.step(step);
                    ++row.cases;
                    ++(ok ? row.intact : row.errors);
                    const auto wrong = static_cast<unsigned>(counters.mismatches.load() - mismatches);
                    row.mismatches += wrong;
                    if (!recovered) ++row.not_recovered;
                    if (wrong != 0 || !recovered)
                        std::fprintf(stderr, "fault matrix: %s: %s with %s failing %s after %u calls: %s\n",
                                     wrong != 0 ? "mismatch" : "not recovered", step_name(step), fault.call,
                                     fault.result_name, pos, worker.last_error().c_str());
                    row.slowest_ms = std::max(
                        row.slowest_ms, std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
                    watchdog.disarm();
                }
        }
        worker.drop_stream();
        std::lock_guard lock(shared_mu);
        shared.reset();
    }
    const double seconds = std::chrono::duration<double>(Clock::now() - started).count();
    print_table(rows, o.positions, seconds);
    bool ok = passed(rows);
    const double grown = rss_mib() - rss_before;
    std::printf("RSS grew %.1f MiB over the matrix", grown);
    const keel::AllocatorStats stats = memory.stats();
    std::printf("; reserved at the end, every stream closed: %llu bytes\n",
                static_cast<unsigned long long>(stats.reserved_bytes));
    if (stats.reserved_bytes != 0) ok = false;
    if (grown > 256) ok = false;
    return ok ? 0 : 1;
}

// cpu:0: its faults are set when the plugin loads, so every case runs in a
// child process of its own (the checker's detectors on), with an alarm as
// the bound. Exit status of a child: bit 0 the step reported an error, bit 1
// a mismatch, bit 2 not recovered; 64 + that.
int run_cpu_case(const MatrixOptions& o, const char* variable, unsigned pos, Step step, bool recovery_expected) {
    ::setenv(variable, std::to_string(pos).c_str(), 1);
    ::alarm(static_cast<unsigned>(o.case_limit_s));
    keel::Runtime rt = keel::Runtime::create().expect("loading the plugins");
    auto device = rt.device(o.device);
    if (!device.ok()) return 3;
    std::mutex shared_mu;
    std::optional<keel::Stream> shared;
    Counters counters;
    int status = 64;
    {
        Worker worker(*device, shared, shared_mu, counters, 7, /*faults=*/false);
        // The fault counts executed ops from the start: the first step may
        // not reach it. Up to three steps, to the first that fails.
        for (int i = 0; i < 3 && (status & 1) == 0; ++i)
            if (!worker.step(step)) status |= 1;
        if ((status & 1) != 0 && recovery_expected && !worker.step(step)) {
            status |= 4;
            std::fprintf(stderr, "fault matrix: the step after the fault failed: %s\n", worker.last_error().c_str());
        }
        worker.drop_stream();
        std::lock_guard lock(shared_mu);
        shared.reset();
    }
    if (counters.mismatches.load() != 0) status |= 2;
    return status;
}

int cpu_matrix(const MatrixOptions& o) {
    struct Fault {
        const char* name;
        const char* variable;
        bool recovers;  // an op fails once; allocations keep failing
    };
    static constexpr Fault kFaults[] = {{"executed op fails (KEEL_CPU_FAIL_OP_AFTER)", "KEEL_CPU_FAIL_OP_AFTER", true},
                                        {"allocation fails (KEEL_CPU_FAIL_ALLOC_AFTER)", "KEEL_CPU_FAIL_ALLOC_AFTER",
                                         false}};
    std::map<std::string, Row> rows;
    const auto started = Clock::now();
    for (const Fault& fault : kFaults) {
        Row& row = rows[fault.name];
        for (unsigned k = 0; k < kSteps; ++k)
            for (unsigned pos = 0; pos < o.positions; ++pos) {
                const Step step = static_cast<Step>(k);
                const auto t0 = Clock::now();
                std::fflush(nullptr);
                const pid_t child = ::fork();
                if (child < 0) {
                    std::perror("fork");
                    return 2;
                }
                if (child == 0) ::_exit(run_cpu_case(o, fault.variable, pos, step, fault.recovers));
                int wstatus = 0;
                ::waitpid(child, &wstatus, 0);
                ++row.cases;
                row.slowest_ms =
                    std::max(row.slowest_ms, std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
                const char* what = nullptr;
                if (WIFSIGNALED(wstatus) && WTERMSIG(wstatus) == SIGALRM) {
                    ++row.hangs;
                    what = "hang";
                } else if (!WIFEXITED(wstatus) || (WEXITSTATUS(wstatus) & 64) == 0) {
                    ++row.crashes;
                    what = "aborted";
                } else {
                    const int s = WEXITSTATUS(wstatus);
                    ++((s & 1) != 0 ? row.errors : row.intact);
                    if ((s & 2) != 0) row.mismatches++, what = "mismatch";
                    if ((s & 4) != 0) row.not_recovered++, what = "not recovered";
                }
                if (what != nullptr)
                    std::fprintf(stderr, "fault matrix: %s: %s with %s=%u\n", what, step_name(step), fault.variable, pos);
            }
    }
    print_table(rows, o.positions, std::chrono::duration<double>(Clock::now() - started).count());
    return passed(rows) ? 0 : 1;
}

}  // namespace

int run_matrix(const MatrixOptions& o) {
    const std::string type = o.device.substr(0, o.device.find(':'));
    if (type == "cpu") return cpu_matrix(o);
    if (type == "level_zero") return driver_matrix(o);
    std::fprintf(stderr, "fault matrix: %s injects no faults keel-soak knows of (cpu:0, level_zero:0 on the fake driver)\n",
                 o.device.c_str());
    return 2;
}

}  // namespace soak
