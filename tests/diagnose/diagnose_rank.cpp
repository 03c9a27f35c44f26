// keel_diagnose_rank: one rank of the planted communication hang. Three
// ranks all_reduce once; then ranks 0 and 1 enqueue a second all_reduce that
// rank 2 never calls, and synchronize: past KEEL_HANG_TIMEOUT their watch
// writes the diagnosis to <dir>/report-<rank>.json. Rank 2 diagnoses too,
// once their reports are there, then aborts the communicator, which ends the
// hang on every rank. Each rank checks the message it got and exits 0 when
// it names the missing rank and the operation.
#include <keel/comm.hpp>
#include <keel/diagnose.hpp>
#include <keel/keel.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

namespace {

int failures = 0;

void check(bool ok, const std::string& what, const std::string& text) {
    if (ok) return;
    ++failures;
    std::fprintf(stderr, "check failed: %s\n--- in ---\n%s\n---\n", what.c_str(), text.c_str());
}

std::string read_file(const std::filesystem::path& p) {
    std::ifstream in(p);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

// Until `p` holds `needle` (a report of an earlier, shorter wait may be
// there first).
bool wait_for_text(const std::filesystem::path& p, const std::string& needle, std::chrono::seconds patience) {
    const auto end = std::chrono::steady_clock::now() + patience;
    while (std::chrono::steady_clock::now() < end) {
        if (std::filesystem::exists(p) && read_file(p).find(needle) != std::string::npos) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
}

// Two ranks, two communicators on one stream each, their all_reduces
// enqueued in opposite orders: each rank's first gate waits for the other,
// whose stream holds the matching operation behind its own first gate. The
// watch's report names the cycle through both communicators; each rank then
// aborts both, which ends the hang.
int run_cycle(const keel::RankInfo& info, const std::filesystem::path& report) {
    keel::Runtime runtime = keel::Runtime::create().expect("Runtime::create");
    keel::Device cpu = runtime.device("cpu:0").expect("cpu:0");
    keel::CommOptions options;
    options.timeout = std::chrono::seconds(20);  // the ranks end the hang before this
    options.key_prefix = "cycle-a";
    keel::Communicator a = keel::Communicator::create_from_env(cpu, options).expect("Communicator::create a");
    options.key_prefix = "cycle-b";
    keel::Communicator b = keel::Communicator::create_from_env(cpu, options).expect("Communicator::create b");
    keel::Stream stream = keel::Stream::create(cpu).expect("Stream::create");
    keel::Buffer buf = keel::Buffer::allocate(stream, 1024).expect("Buffer::allocate");
    (void)stream.memset(buf.view(), 0);
    keel::Communicator& first = info.rank == 0 ? a : b;
    keel::Communicator& second = info.rank == 0 ? b : a;
    first.all_reduce(stream, buf.view(), KEEL_DTYPE_F32, keel::ReduceOp::sum).expect("first all_reduce");
    second.all_reduce(stream, buf.view(), KEEL_DTYPE_F32, keel::ReduceOp::sum).expect("second all_reduce");
    std::thread ender([&] {
        check(wait_for_text(report, "cycle across communicators", std::chrono::seconds(15)),
              "the watch wrote the cycle to " + report.string(), std::filesystem::exists(report) ? read_file(report) : "");
        a.abort();
        b.abort();
    });
    const keel::Result<void> r = stream.synchronize();  // the hang
    ender.join();
    check(!r.ok(), "the planted hang ends with the communicators' error", r.ok() ? "ok" : r.error().message());
    const std::string text = read_file(report);
    check(text.find("\"cycle\":true") != std::string::npos, "the report says the ranks are in a cycle", text);
    for (const char* part : {"of 'cycle-a' waits in all_reduce #0 for rank", "queued behind 'cycle-b' all_reduce #0",
                             "of 'cycle-b' waits in all_reduce #0 for rank", "queued behind 'cycle-a' all_reduce #0"})
        check(text.find(part) != std::string::npos, std::string("the cycle names: ") + part, text);
    (void)stream.close();
    if (failures == 0) std::printf("rank %d: the diagnosis named the cycle\n", info.rank);
    return failures == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: keel_diagnose_rank [cycle:]<report directory>\n");
        return 2;
    }
    const std::string scenario = argv[1];
    const bool cycle = scenario.rfind("cycle:", 0) == 0;
    const std::filesystem::path dir = cycle ? scenario.substr(6) : scenario;
    const keel::RankInfo info = keel::rank_from_env().expect("rank_from_env");
    const std::filesystem::path report = dir / ("report-" + std::to_string(info.rank) + ".json");
    // Before keel reads it (once, at the first wait).
    ::setenv("KEEL_HANG_REPORT", report.c_str(), 1);
    if (cycle) return run_cycle(info, report);

    keel::Runtime runtime = keel::Runtime::create().expect("Runtime::create");
    keel::Device cpu = runtime.device("cpu:0").expect("cpu:0");
    keel::CommOptions options;
    options.timeout = std::chrono::seconds(20);  // the test ends the hang before this
    keel::Communicator comm = keel::Communicator::create_from_env(cpu, options).expect("Communicator::create");
    keel::Stream stream = keel::Stream::create(cpu).expect("Stream::create");
    keel::Buffer buf = keel::Buffer::allocate(stream, 1024).expect("Buffer::allocate");
    (void)stream.memset(buf.view(), 0);
    comm.all_reduce(stream, buf.view(), KEEL_DTYPE_F32, keel::ReduceOp::sum).expect("all_reduce #0");
    stream.synchronize().expect("all_reduce #0 ran");

    const std::string op = "ranks not arrived at all_reduce #1 of communicator '" + comm.store_prefix() + "': rank 2 (";
    if (info.rank != 2) {
        comm.all_reduce(stream, buf.view(), KEEL_DTYPE_F32, keel::ReduceOp::sum).expect("all_reduce #1 enqueued");
        const keel::Result<void> r = stream.synchronize();  // the hang; ended by rank 2's abort
        check(!r.ok(), "the planted hang ends with the communicator's error", r.ok() ? "ok" : r.error().message());
        check(wait_for_text(report, "all_reduce #1", std::chrono::seconds(5)), "the watch wrote " + report.string(), "");
        const std::string text = read_file(report);
        check(text.find("hang: thread") != std::string::npos, "the report says which wait passed the timeout", text);
        check(text.find("in Stream::synchronize") != std::string::npos, "the report names the host wait", text);
        check(text.find(op) != std::string::npos, "the report names rank 2 and all_reduce #1", text);
        check(text.find("waits in all_reduce #1") != std::string::npos, "this rank waits in all_reduce #1", text);
    } else {
        // Not blocked: rank 2 asks for the diagnosis once the others have
        // written theirs (their reports are in the store by then).
        for (int r = 0; r < 2; ++r)
            check(wait_for_text(dir / ("report-" + std::to_string(r) + ".json"), "ranks not arrived at all_reduce #1",
                                std::chrono::seconds(20)),
                  "rank " + std::to_string(r) + " wrote its report", "");
        const keel::Diagnosis d = keel::diagnose();
        check(d.text.find(op + "this rank enqueued 1 operations") != std::string::npos,
              "rank 2 learns from the others' reports that it has not arrived", d.text);
        check(d.text.find("ranks waiting in all_reduce #1: 0, 1") != std::string::npos,
              "rank 2 sees ranks 0 and 1 waiting", d.text);
        comm.abort();  // ends the hang on every rank
    }
    (void)stream.close();
    if (failures == 0) std::printf("rank %d: the diagnosis named the missing rank\n", info.rank);
    return failures == 0 ? 0 : 1;
}
