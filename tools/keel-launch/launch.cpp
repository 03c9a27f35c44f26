// keel-launch: starts the ranks of a keel::comm job on this host, as
// torchrun does: one process of `program` per local rank, with RANK,
// LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_RANK and the store
// (KEEL_COMM_STORE) that keel::Communicator::create_from_env reads. On one
// host the store is a fresh directory; across hosts (--nnodes) it is a TCP
// store that rank 0 hosts at --master (MASTER_ADDR/MASTER_PORT), so the
// hosts share nothing. Exits with the first failing rank's status after
// stopping the others; 0 when every rank succeeds. Each rank runs in its
// own process group, so stopping it stops what it started too; a rank
// still running --stop-timeout seconds after SIGTERM is killed, and the
// ranks die with keel-launch (PR_SET_PDEATHSIG) even when it is killed.
#include <keel/environment.hpp>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <sys/prctl.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace fs = std::filesystem;

namespace {

struct Options {
    int nproc = 1;
    int nnodes = 1;
    int node_rank = 0;
    std::string master;  // ADDR:PORT
    std::string store_dir;
    std::string job_id;
    std::string interface;
    double stop_timeout = 30;  // seconds from SIGTERM to SIGKILL, as torchrun's
    bool standalone = false;   // torchrun's --standalone: what one host does anyway
};

// A program name without '/' is looked up beside keel-launch first (the
// tools installed with it), then on PATH.
std::string resolve(const std::string& program) {
    if (program.find('/') != std::string::npos) return program;
    std::error_code ec;
    const fs::path here = fs::canonical("/proc/self/exe", ec).parent_path();
    if (!ec && fs::exists(here / program)) return (here / program).string();
    return program;  // execvp searches PATH
}

std::string random_id() {
    std::random_device entropy;
    char id[17];
    std::snprintf(id, sizeof id, "%08x%08x", entropy(), entropy());
    return id;
}

// "rank 1 exited with status 3", "rank 1 killed by SIGSEGV".
std::string describe(int rank, int status) {
    if (WIFSIGNALED(status)) {
        const char* abbrev = ::sigabbrev_np(WTERMSIG(status));
        return "rank " + std::to_string(rank) + " killed by " +
               (abbrev ? "SIG" + std::string(abbrev) : "signal " + std::to_string(WTERMSIG(status)));
    }
    return "rank " + std::to_string(rank) + " exited with status " + std::to_string(WEXITSTATUS(status));
}

int fail(const std::string& message) {
    std::fprintf(stderr, "keel-launch: %s\n", message.c_str());
    return 1;
}

// The ranks' pids (each also its process group's id); changed only while
// SIGINT, SIGTERM and SIGALRM are blocked, so the handlers may read it.
std::vector<pid_t> g_children;
volatile std::sig_atomic_t g_stop_signal = 0;
itimerval g_stop_timer{};  // one shot of --stop-timeout

// `sig` to every rank's process group: the rank and what it started.
void signal_ranks(int sig) {
    for (pid_t p : g_children) ::kill(-p, sig);
}

// Stopping: SIGTERM (or the signal keel-launch got) now, SIGKILL to what
// is left when the stop timeout passes.
void begin_stop(int sig) {
    signal_ranks(sig);
    ::setitimer(ITIMER_REAL, &g_stop_timer, nullptr);
}

// SIGINT/SIGTERM to keel-launch go on to every rank, as torchrun's do; a
// second one kills them at once.
void forward(int sig) {
    if (g_stop_signal != 0) {
        signal_ranks(SIGKILL);
        return;
    }
    g_stop_signal = sig;
    begin_stop(sig);
}

void stop_timed_out(int) {
    static const char message[] = "keel-launch: ranks still running after the stop timeout (--stop-timeout); killing them\n";
    (void)!::write(STDERR_FILENO, message, sizeof message - 1);
    signal_ranks(SIGKILL);
}

}  // namespace

int main(int argc, char** argv) {
    // Everything after "--" is the program and its arguments.
    int split = 1;
    while (split < argc && std::strcmp(argv[split], "--") != 0) ++split;

    Options o;
    CLI::App app{
        "Starts the ranks of a keel::comm job on this host (torchrun's variables: RANK, LOCAL_RANK, WORLD_SIZE,\n"
        "LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR, MASTER_PORT) with the store keel::Communicator::create_from_env\n"
        "reads. One host: a fresh file store. Several: run keel-launch on each with --nnodes, --node-rank and\n"
        "the same --master; rank 0 hosts a TCP store there, nothing shared is needed.\n\n"
        "usage: keel-launch [options] -- program [args...]",
        "keel-launch"};
    app.add_option("-n,--nproc-per-node,--nproc_per_node,--nproc", o.nproc, "Ranks on this host")
        ->capture_default_str()
        ->check(CLI::Range(1, 65536));
    app.add_option("--nnodes", o.nnodes, "Hosts in the job")->capture_default_str()->check(CLI::Range(1, 65536));
    app.add_option("--node-rank,--node_rank", o.node_rank, "This host's place among them, 0..nnodes-1")
        ->capture_default_str()
        ->check(CLI::Range(0, 65535));
    app.add_option("--master,--rdzv-endpoint,--rdzv_endpoint", o.master,
                   "ADDR:PORT of node 0, where rank 0 hosts the TCP store (needed with --nnodes > 1)");
    std::string master_addr_option, master_port_option;
    app.add_option("--master-addr,--master_addr", master_addr_option, "torchrun's spelling: --master's ADDR");
    app.add_option("--master-port,--master_port", master_port_option, "torchrun's spelling: --master's PORT");
    app.add_option("--store", o.store_dir,
                   "One host: the file store's directory (default: $KEEL_COMM_STORE if set, else a fresh directory, "
                   "removed after)");
    app.add_option("--job-id,--rdzv-id,--rdzv_id,--run-id,--run_id", o.job_id,
                   "Names the job's keys in the store (KEEL_COMM_JOB_ID); default: $TORCHELASTIC_RUN_ID, else random "
                   "on one host, else derived from --master");
    app.add_option("--interface", o.interface,
                   "Network interface the ranks listen on (KEEL_COMM_INTERFACE; default: $KEEL_COMM_INTERFACE, else "
                   "$GLOO_SOCKET_IFNAME, else 127.0.0.1 on one host)");
    app.add_option("--stop-timeout", o.stop_timeout,
                   "Seconds a rank has to end after SIGTERM (another rank failed, or keel-launch was stopped) "
                   "before it is killed")
        ->capture_default_str()
        ->check(CLI::Range(0.0, 86400.0));
    app.add_flag("--standalone", o.standalone, "torchrun's flag: one host with a fresh store (what keel-launch does "
                                               "without --master)");
    // As torchrun: the program may follow the options without "--".
    app.prefix_command();
    std::vector<std::string> program_args;
    try {
        app.parse(split, argv);
        program_args = app.remaining();
        if (!program_args.empty() && program_args[0].starts_with("-"))
            return fail("unknown option '" + program_args[0] + "' (see --help)");
    } catch (const CLI::CallForHelp& e) {
        return app.exit(e);
    } catch (const CLI::ParseError& e) {
        return fail(std::string(e.what()) + " (see --help)");
    }
    for (int j = split + 1; j < argc; ++j) program_args.emplace_back(argv[j]);
    if (program_args.empty()) return fail("no program given: keel-launch [options] [--] program [args...]");
    if (!master_addr_option.empty() || !master_port_option.empty()) {
        if (!o.master.empty()) return fail("--master and --master-addr/--master-port: give one");
        if (master_addr_option.empty() || master_port_option.empty())
            return fail("--master-addr and --master-port go together (or give --master ADDR:PORT)");
        o.master = master_addr_option + ":" + master_port_option;
    }
    if (o.standalone && !o.master.empty()) return fail("--standalone and --master: give one");
    if (o.node_rank >= o.nnodes)
        return fail("--node-rank " + std::to_string(o.node_rank) + ": expected 0.." + std::to_string(o.nnodes - 1) +
                    " (--nnodes " + std::to_string(o.nnodes) + ")");
    std::string master_addr, master_port;
    if (!o.master.empty()) {
        const auto colon = o.master.rfind(':');
        char* end = nullptr;
        const long port = colon == std::string::npos ? 0 : std::strtol(o.master.c_str() + colon + 1, &end, 10);
        if (colon == std::string::npos || colon == 0 || end == o.master.c_str() + colon + 1 || *end != '\0' ||
            port < 1 || port > 65535)
            return fail("--master '" + o.master + "': expected ADDR:PORT with a port 1..65535");
        master_addr = o.master.substr(0, colon);
        master_port = std::to_string(port);
    } else if (o.nnodes > 1) {
        return fail("--nnodes " + std::to_string(o.nnodes) + " needs --master ADDR:PORT (node 0's address)");
    }
    if (!o.store_dir.empty() && !master_addr.empty())
        return fail("--store and --master are two stores: give one");
    if (o.job_id.empty()) {
        const std::optional<std::string_view> run_id = keel::env::foreign("TORCHELASTIC_RUN_ID");
        if (run_id && !run_id->empty() && *run_id != "none") o.job_id = std::string(*run_id);
        else if (master_addr.empty()) o.job_id = random_id();
        else o.job_id = "tcp-" + master_addr + "-" + master_port;  // the same on every host
    }

    // The store: a TCP store at --master, else a directory.
    std::string store;
    bool own_dir = false;
    const std::optional<std::string_view> inherited = keel::env::text(keel::env::Var::comm_store);
    if (!master_addr.empty()) {
        store = "tcp:" + master_addr + ":" + master_port;
    } else if (o.store_dir.empty() && inherited && !inherited->empty()) {
        store = std::string(*inherited);  // the user's own store (a Redis server): the job id keeps runs apart
    } else {
        if (o.store_dir.empty()) {
            std::string tmpl = (fs::temp_directory_path() / "keel-launch-XXXXXX").string();
            if (::mkdtemp(tmpl.data()) == nullptr)
                return fail(std::string("cannot create a store directory: ") + std::strerror(errno));
            o.store_dir = tmpl;
            own_dir = true;
        }
        store = "file:" + o.store_dir;
    }
    program_args[0] = resolve(program_args[0]);
    std::vector<char*> args;
    for (std::string& a : program_args) args.push_back(a.data());
    args.push_back(nullptr);

    const int world = o.nnodes * o.nproc;
    std::vector<int> ranks;
    struct sigaction sa {};
    const auto stop_us = static_cast<long>(o.stop_timeout * 1e6);
    g_stop_timer.it_value.tv_sec = stop_us / 1000000;
    g_stop_timer.it_value.tv_usec = std::max(stop_us % 1000000, stop_us == 0 ? 1L : 0L);  // 0 would disarm
    sigset_t stop_signals, before;
    ::sigemptyset(&stop_signals);
    ::sigaddset(&stop_signals, SIGINT);
    ::sigaddset(&stop_signals, SIGTERM);
    ::sigaddset(&stop_signals, SIGALRM);
    sa.sa_handler = forward;
    sa.sa_mask = stop_signals;  // the handlers do not interrupt each other
    ::sigaction(SIGINT, &sa, nullptr);
    ::sigaction(SIGTERM, &sa, nullptr);
    sa.sa_handler = stop_timed_out;
    ::sigaction(SIGALRM, &sa, nullptr);
    // A stop signal during the forks is handled once every rank is known.
    ::sigprocmask(SIG_BLOCK, &stop_signals, &before);
    const pid_t launcher = ::getpid();
    g_children.reserve(static_cast<std::size_t>(o.nproc));
    for (int local = 0; local < o.nproc; ++local) {
        const int rank = o.node_rank * o.nproc + local;
        const pid_t pid = ::fork();
        if (pid < 0) {
            signal_ranks(SIGKILL);
            return fail(std::string("fork failed: ") + std::strerror(errno));
        }
        if (pid == 0) {
            ::setpgid(0, 0);
            ::prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (::getppid() != launcher) ::_exit(128 + SIGKILL);  // keel-launch died before the line above
            ::signal(SIGINT, SIG_DFL);
            ::signal(SIGTERM, SIG_DFL);
            ::signal(SIGALRM, SIG_DFL);
            ::sigprocmask(SIG_SETMASK, &before, nullptr);
            ::setenv("RANK", std::to_string(rank).c_str(), 1);
            ::setenv("LOCAL_RANK", std::to_string(local).c_str(), 1);
            ::setenv("WORLD_SIZE", std::to_string(world).c_str(), 1);
            ::setenv("LOCAL_WORLD_SIZE", std::to_string(o.nproc).c_str(), 1);
            ::setenv("GROUP_RANK", std::to_string(o.node_rank).c_str(), 1);
            ::setenv("KEEL_COMM_STORE", store.c_str(), 1);
            ::setenv("KEEL_COMM_JOB_ID", o.job_id.c_str(), 1);
            if (!master_addr.empty()) {
                ::setenv("MASTER_ADDR", master_addr.c_str(), 1);
                ::setenv("MASTER_PORT", master_port.c_str(), 1);
            }
            if (!o.interface.empty()) ::setenv("KEEL_COMM_INTERFACE", o.interface.c_str(), 1);
            ::execvp(args[0], args.data());
            std::fprintf(stderr, "keel-launch: cannot run %s: %s\n", args[0], std::strerror(errno));
            ::_exit(127);
        }
        ::setpgid(pid, pid);  // as the child does: whichever runs first
        g_children.push_back(pid);
        ranks.push_back(rank);
    }
    ::sigprocmask(SIG_SETMASK, &before, nullptr);
    int result = 0;
    std::size_t left = g_children.size();
    while (left > 0) {
        int status = 0;
        const pid_t done = ::wait(&status);
        if (done < 0) {
            if (errno == EINTR) continue;
            break;
        }
        --left;
        int rank = -1;
        for (std::size_t k = 0; k < g_children.size(); ++k)
            if (g_children[k] == done) rank = ranks[k];
        const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        if (code != 0 && result == 0) {
            result = code;
            if (g_stop_signal == 0) {
                std::fprintf(stderr, "keel-launch: %s; stopping the others\n", describe(rank, status).c_str());
                ::sigprocmask(SIG_BLOCK, &stop_signals, nullptr);
                begin_stop(SIGTERM);  // the failed rank's group too: what it started
                ::sigprocmask(SIG_SETMASK, &before, nullptr);
            }
        }
    }
    const itimerval off{};
    ::setitimer(ITIMER_REAL, &off, nullptr);
    if (own_dir) {
        std::error_code ec;
        fs::remove_all(o.store_dir, ec);
    }
    if (g_stop_signal != 0 && result == 0) result = 128 + g_stop_signal;
    return result;
}
