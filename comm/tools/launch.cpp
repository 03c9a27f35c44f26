// keel-launch -n N [--store DIR] -- program args...
//
// Starts N local processes of `program`, as torchrun --standalone does:
// each gets RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE and
// KEEL_COMM_STORE=file:<a fresh directory>, which
// keel::Communicator::create_from_env reads. A program name without '/' is
// looked up beside keel-launch first (keel-comm-bench, keel-pipeline), then
// on PATH. Exits with the first non-zero status of a rank (after stopping
// the others), 0 when all succeed.
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace fs = std::filesystem;

namespace {

int usage() {
    std::fprintf(stderr, "usage: keel-launch -n N [--store DIR] -- program [args...]\n");
    return 2;
}

std::string resolve(const std::string& program, const char* self) {
    if (program.find('/') != std::string::npos) return program;
    std::error_code ec;
    const fs::path here = fs::canonical("/proc/self/exe", ec).parent_path();
    (void)self;
    if (!ec && fs::exists(here / program)) return (here / program).string();
    return program;  // execvp searches PATH
}

}  // namespace

int main(int argc, char** argv) {
    int n = 0;
    std::string store_dir;
    int i = 1;
    for (; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--") {
            ++i;
            break;
        }
        if ((a == "-n" || a == "--nproc") && i + 1 < argc) {
            n = std::atoi(argv[++i]);
        } else if (a == "--store" && i + 1 < argc) {
            store_dir = argv[++i];
        } else {
            return usage();
        }
    }
    if (n < 1 || i >= argc) return usage();
    bool own_dir = false;
    if (store_dir.empty()) {
        std::string tmpl = (fs::temp_directory_path() / "keel-launch-XXXXXX").string();
        if (::mkdtemp(tmpl.data()) == nullptr) {
            std::fprintf(stderr, "keel-launch: cannot create a store directory: %s\n", std::strerror(errno));
            return 1;
        }
        store_dir = tmpl;
        own_dir = true;
    }
    const std::string program = resolve(argv[i], argv[0]);
    std::vector<char*> args;
    args.push_back(const_cast<char*>(program.c_str()));
    for (int j = i + 1; j < argc; ++j) args.push_back(argv[j]);
    args.push_back(nullptr);

    std::vector<pid_t> pids;
    for (int rank = 0; rank < n; ++rank) {
        const pid_t pid = ::fork();
        if (pid < 0) {
            std::fprintf(stderr, "keel-launch: fork failed: %s\n", std::strerror(errno));
            for (pid_t p : pids) ::kill(p, SIGTERM);
            return 1;
        }
        if (pid == 0) {
            ::setenv("RANK", std::to_string(rank).c_str(), 1);
            ::setenv("LOCAL_RANK", std::to_string(rank).c_str(), 1);
            ::setenv("WORLD_SIZE", std::to_string(n).c_str(), 1);
            ::setenv("LOCAL_WORLD_SIZE", std::to_string(n).c_str(), 1);
            ::setenv("KEEL_COMM_STORE", ("file:" + store_dir).c_str(), 1);
            ::execvp(args[0], args.data());
            std::fprintf(stderr, "keel-launch: cannot run %s: %s\n", args[0], std::strerror(errno));
            ::_exit(127);
        }
        pids.push_back(pid);
    }
    int result = 0;
    std::size_t left = pids.size();
    while (left > 0) {
        int status = 0;
        const pid_t done = ::wait(&status);
        if (done < 0) {
            if (errno == EINTR) continue;
            break;
        }
        --left;
        const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        if (code != 0 && result == 0) {
            result = code;
            std::fprintf(stderr, "keel-launch: a rank (pid %d) ended with status %d; stopping the others\n",
                         static_cast<int>(done), code);
            for (pid_t p : pids)
                if (p != done) ::kill(p, SIGTERM);
        }
    }
    if (own_dir) {
        std::error_code ec;
        fs::remove_all(store_dir, ec);
    }
    return result;
}
