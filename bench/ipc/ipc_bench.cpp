// keel-ipc-bench: how long it takes to hand device memory to another
// process (keel.h 1.6), two processes joined by a Unix socket pair:
//
//   export    ipc::export_memory in the exporter
//   transfer  send_handle + receive_handle (the descriptor with SCM_RIGHTS)
//   import    ipc::import_memory in the importer (maps the allocation)
//   close     ImportedBuffer::close in the importer
//   round trip  from export to the importer's acknowledgement of the import
//
// beside two baselines of the same run: a 1-byte socket round trip (the
// least a handover between processes costs) and RawBuffer::allocate + free
// (an allocation that stays in the process). Medians of --reps runs per row.
//
// With --event-devices, one row per device for an event shared the same way
// (ipc::create_event, export_event, import_event):
//
//   export    ipc::export_event in the exporter
//   import    ipc::import_event in the importer
//   wake      from the exporter releasing its stream (a host function holds
//             it before the record) to the importer's Event::synchronize
//             returning, as seen by the exporter (one socket message back)
//   round trip  from export to that wake-up, the handover included
//
// Usage: keel-ipc-bench [--device cpu:0] [--reps 200] [--sizes 4096,1048576,67108864]
//                       [--event-devices cpu:0,level_zero:0]
#include <keel/ipc.hpp>
#include <keel/keel.hpp>
#include <keel/testing/bench_stats.hpp>
#include <keel/tools/cli.hpp>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <future>
#include <string>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

double micros(Clock::duration d) { return std::chrono::duration<double, std::micro>(d).count(); }

using keel::testing::median;

bool write_all(int fd, const void* p, std::size_t n) {
    const auto* c = static_cast<const char*>(p);
    while (n > 0) {
        const ssize_t w = ::write(fd, c, n);
        if (w <= 0) return false;
        c += w;
        n -= static_cast<std::size_t>(w);
    }
    return true;
}
bool read_all(int fd, void* p, std::size_t n) {
    auto* c = static_cast<char*>(p);
    while (n > 0) {
        const ssize_t r = ::read(fd, c, n);
        if (r <= 0) return false;
        c += r;
        n -= static_cast<std::size_t>(r);
    }
    return true;
}

// What the importer reports per run: receive, import, close (microseconds).
struct ImporterTimes {
    double transfer_end_us = 0;  // receive finished, relative to its start of waiting
    double import_us = 0;
    double close_us = 0;
};

int importer(int socket, const std::string& device_name, int runs_total) {
    auto rt = keel::Runtime::create();
    if (!rt.ok()) return 2;
    auto dev = rt->device(device_name);
    if (!dev.ok()) return 2;
    char go = 0;
    // Baseline: bare round trips.
    for (;;) {
        if (!read_all(socket, &go, 1)) return 3;
        if (go == 'e') break;
        if (!write_all(socket, &go, 1)) return 3;
    }
    for (int i = 0; i < runs_total; ++i) {
        auto h = keel::ipc::receive_handle(socket);
        if (!h.ok()) return 4;
        const auto t0 = Clock::now();
        auto mem = keel::ipc::import_memory(*dev, *h);
        const auto t1 = Clock::now();
        if (!mem.ok()) return 5;
        const char ack = 'a';
        if (!write_all(socket, &ack, 1)) return 3;
        const auto t2 = Clock::now();
        if (!mem->close().ok()) return 6;
        const auto t3 = Clock::now();
        const double times[2] = {micros(t1 - t0), micros(t3 - t2)};
        if (!write_all(socket, times, sizeof times)) return 3;
    }
    return 0;
}

// The importer's side of the event rows: per run, import (ack), wait for the
// record (ack), then the import's time.
int event_importer(int socket, const std::string& device_name, int runs) {
    auto rt = keel::Runtime::create();
    if (!rt.ok()) return 2;
    auto dev = rt->device(device_name);
    if (!dev.ok()) return 2;
    for (int i = 0; i < runs; ++i) {
        auto h = keel::ipc::receive_handle(socket);
        if (!h.ok()) return 4;
        const auto t0 = Clock::now();
        auto ev = keel::ipc::import_event(*dev, *h);
        const auto t1 = Clock::now();
        if (!ev.ok()) return 5;
        const char imported = 'a';
        if (!write_all(socket, &imported, 1)) return 3;
        if (!ev->synchronize().ok()) return 6;
        const char woken = 'w';
        if (!write_all(socket, &woken, 1)) return 3;
        const double import_us = micros(t1 - t0);
        if (!write_all(socket, &import_us, sizeof import_us)) return 3;
    }
    return 0;
}

struct EventRow {
    double export_us = 0, import_us = 0, wake_us = 0, trip_us = 0;
};

// The exporter's side of one device's event row; an error message or "".
std::string event_row(int socket, const keel::Device& dev, int reps, EventRow& row) {
    std::vector<double> exp, imp, wake, trip;
    auto stream = keel::Stream::create(dev);
    if (!stream.ok()) return stream.error().message();
    for (int i = 0; i < reps; ++i) {
        auto ev = keel::ipc::create_event(dev);
        if (!ev.ok()) return ev.error().message();
        std::promise<void> gate;
        if (!stream->enqueue_host_func([held = gate.get_future().share()] { held.wait(); }).ok())
            return "enqueue_host_func failed";
        if (!ev->record(*stream).ok()) return "record failed";
        const auto t0 = Clock::now();
        auto h = keel::ipc::export_event(*ev);
        const auto t1 = Clock::now();
        if (!h.ok()) return h.error().message();
        if (!keel::ipc::send_handle(socket, *h).ok()) return "send_handle failed";
        char ack = 0;
        if (!read_all(socket, &ack, 1)) return "the importer went away (import failed?)";
        const auto t2 = Clock::now();
        gate.set_value();
        if (!read_all(socket, &ack, 1)) return "the importer went away (wait failed?)";
        const auto t3 = Clock::now();
        double import_us = 0;
        if (!read_all(socket, &import_us, sizeof import_us)) return "the importer went away";
        if (!stream->synchronize().ok()) return "the stream failed";
        exp.push_back(micros(t1 - t0));
        imp.push_back(import_us);
        wake.push_back(micros(t3 - t2));
        trip.push_back(micros(t3 - t0));
    }
    row.export_us = median(exp);
    row.import_us = median(imp);
    row.wake_us = median(wake);
    row.trip_us = median(trip);
    return "";
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"keel-ipc-bench: latency of exporting device memory to another process and importing it there "
                 "(keel.h 1.6), beside a socket round trip and a plain allocation, in one run"};
    keel::cli::show_defaults(app);
    std::string device_name = "cpu:0";
    int reps = 200;
    std::vector<std::uint64_t> sizes{4096, 1u << 20, 64u << 20};
    app.add_option("--device", device_name, "device to share memory of (both processes)");
    app.add_option("--reps", reps, "runs per row (medians are printed)")->check(CLI::Range(1, 100000));
    app.add_option("--sizes", sizes, "allocation sizes in bytes")->delimiter(',');
    std::vector<std::string> event_devices;
    app.add_option("--event-devices", event_devices, "devices to share an event of, one row each (none: no event rows)")
        ->delimiter(',');
    if (auto code = keel::cli::parse(app, argc, argv)) return *code;
    for (std::uint64_t s : sizes)
        if (s == 0) return keel::cli::fail(app, "--sizes: a size must be > 0");

    int sockets[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM, 0, sockets) != 0) return keel::cli::fail(app, "socketpair failed");
    const int runs_total = reps * static_cast<int>(sizes.size());
    // Every importer is forked before any Runtime exists: one thread.
    std::vector<int> event_sockets;
    std::vector<pid_t> event_children;
    for (const std::string& name : event_devices) {
        int pair[2];
        if (::socketpair(AF_UNIX, SOCK_STREAM, 0, pair) != 0) return keel::cli::fail(app, "socketpair failed");
        const pid_t pid = ::fork();
        if (pid == 0) {
            ::close(pair[0]);
            ::close(sockets[0]);
            ::close(sockets[1]);
            ::_exit(event_importer(pair[1], name, reps));
        }
        ::close(pair[1]);
        event_sockets.push_back(pair[0]);
        event_children.push_back(pid);
    }
    const pid_t child = ::fork();
    if (child == 0) {
        ::close(sockets[0]);
        ::_exit(importer(sockets[1], device_name, runs_total));
    }
    ::close(sockets[1]);
    const int socket = sockets[0];
    auto fail = [&](const std::string& m) {
        ::kill(child, SIGKILL);
        ::waitpid(child, nullptr, 0);
        for (pid_t pid : event_children) {
            ::kill(pid, SIGKILL);
            ::waitpid(pid, nullptr, 0);
        }
        return keel::cli::fail(app, m);
    };
    auto rt = keel::Runtime::create();
    if (!rt.ok()) return fail(rt.error().message());
    auto dev = rt->device(device_name);
    if (!dev.ok()) return fail(dev.error().message());

    std::vector<double> ping;
    for (int i = 0; i < reps; ++i) {
        const char b = 'p';
        char back = 0;
        const auto t0 = Clock::now();
        if (!write_all(socket, &b, 1) || !read_all(socket, &back, 1)) return fail("the importer went away");
        ping.push_back(micros(Clock::now() - t0));
    }
    const char go = 'e';
    if (!write_all(socket, &go, 1)) return fail("the importer went away");

    std::printf("keel-ipc-bench on %s (%s), medians of %d runs, microseconds\n", device_name.c_str(),
                dev->properties().name.c_str(), reps);
    std::printf("socket round trip (1 byte): %.1f us\n\n", median(ping));
    std::printf("%12s %10s %10s %10s %10s %12s %12s %14s\n", "bytes", "alloc", "export", "import", "close",
                "round trip", "vs socket", "plain alloc+free");
    for (std::uint64_t size : sizes) {
        std::vector<double> alloc, exp, imp, cls, trip, plain;
        for (int i = 0; i < reps; ++i) {
            const auto a0 = Clock::now();
            auto mem = keel::ipc::allocate_exportable(*dev, size);
            const auto a1 = Clock::now();
            if (!mem.ok()) return fail(mem.error().message());
            auto h = keel::ipc::export_memory(*mem);
            const auto a2 = Clock::now();
            if (!h.ok()) return fail(h.error().message());
            if (!keel::ipc::send_handle(socket, *h).ok()) return fail("send_handle failed");
            char ack = 0;
            if (!read_all(socket, &ack, 1)) return fail("the importer went away (import failed?)");
            const auto a3 = Clock::now();
            double times[2];
            if (!read_all(socket, times, sizeof times)) return fail("the importer went away");
            alloc.push_back(micros(a1 - a0));
            exp.push_back(micros(a2 - a1));
            trip.push_back(micros(a3 - a1));
            imp.push_back(times[0]);
            cls.push_back(times[1]);
            if (!mem->free().ok()) return fail("free failed");
            const auto p0 = Clock::now();
            auto raw = keel::RawBuffer::allocate(*dev, size);
            if (!raw.ok() || !raw->free().ok()) return fail("plain allocation failed");
            plain.push_back(micros(Clock::now() - p0));
        }
        std::printf("%12llu %10.1f %10.1f %10.1f %10.1f %12.1f %11.1fx %14.1f\n",
                    static_cast<unsigned long long>(size), median(alloc), median(exp), median(imp), median(cls),
                    median(trip), median(trip) / std::max(median(ping), 1e-3), median(plain));
    }
    if (!event_devices.empty()) {
        std::printf("\nevents shared between processes, medians of %d runs, microseconds\n", reps);
        std::printf("%16s %10s %10s %10s %12s %12s\n", "device", "export", "import", "wake", "round trip",
                    "vs socket");
    }
    for (std::size_t d = 0; d < event_devices.size(); ++d) {
        auto edev = rt->device(event_devices[d]);
        if (!edev.ok()) return fail(edev.error().message());
        EventRow row;
        if (const std::string e = event_row(event_sockets[d], *edev, reps, row); !e.empty())
            return fail(event_devices[d] + ": " + e);
        std::printf("%16s %10.1f %10.1f %10.1f %12.1f %11.1fx\n", event_devices[d].c_str(), row.export_us,
                    row.import_us, row.wake_us, row.trip_us, row.trip_us / std::max(median(ping), 1e-3));
    }
    std::vector<pid_t> children = event_children;
    children.push_back(child);
    for (pid_t pid : children) {
        int status = 0;
        ::waitpid(pid, &status, 0);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
            return keel::cli::fail(app, "an importer process failed (status " + std::to_string(status) + ")");
    }
    return 0;
}
