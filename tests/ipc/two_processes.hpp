// Runs an exporter and an importer in two forked processes joined by a Unix
// socket pair, each with its own Runtime (the test process itself loads no
// plugin, so it forks with one thread). Each side returns "" on success or
// what went wrong, which the test reports.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <string>
#include <sys/socket.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <utility>
#include <vector>

namespace keel::testing {

using Side = std::function<std::string(int socket)>;

struct SideResult {
    int code = -1;        // exit code; -1: killed at the deadline
    std::string message;  // what the side reported
};

namespace detail {
inline pid_t start_side(const Side& side, int socket, int other_socket, int report) {
    const pid_t pid = ::fork();
    if (pid != 0) return pid;
    ::close(other_socket);
    std::string message = side(socket);
    if (!message.empty()) {
        [[maybe_unused]] auto n = ::write(report, message.data(), message.size());
    }
    ::_exit(message.empty() ? 0 : 1);
}

inline std::string drain(int fd) {
    std::string out;
    char buf[512];
    ssize_t n = 0;
    while ((n = ::read(fd, buf, sizeof buf)) > 0) out.append(buf, static_cast<std::size_t>(n));
    return out;
}
}  // namespace detail

// Runs both sides at once; kills what is still running after `deadline`.
inline std::pair<SideResult, SideResult> run_two_processes(const Side& exporter, const Side& importer,
                                                           std::chrono::seconds deadline = std::chrono::seconds(60)) {
    int sockets[2];
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sockets), 0);
    int reports[2][2];
    EXPECT_EQ(::pipe(reports[0]), 0);
    EXPECT_EQ(::pipe(reports[1]), 0);
    const pid_t pids[2] = {detail::start_side(exporter, sockets[0], sockets[1], reports[0][1]),
                           detail::start_side(importer, sockets[1], sockets[0], reports[1][1])};
    ::close(sockets[0]);
    ::close(sockets[1]);
    ::close(reports[0][1]);
    ::close(reports[1][1]);
    SideResult results[2];
    bool running[2] = {true, true};
    const auto end = std::chrono::steady_clock::now() + deadline;
    while ((running[0] || running[1]) && std::chrono::steady_clock::now() < end) {
        for (int i = 0; i < 2; ++i) {
            int status = 0;
            if (running[i] && ::waitpid(pids[i], &status, WNOHANG) == pids[i]) {
                results[i].code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
                running[i] = false;
            }
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    for (int i = 0; i < 2; ++i) {
        if (running[i]) {
            ::kill(pids[i], SIGKILL);
            ::waitpid(pids[i], nullptr, 0);
            results[i].message = "killed after the deadline; ";
        }
        results[i].message += detail::drain(reports[i][0]);
        ::close(reports[i][0]);
    }
    return {results[0], results[1]};
}

// One byte each way, to order the two sides' steps ("" or what failed).
inline std::string send_byte(int socket, char b = 'k') {
    return ::write(socket, &b, 1) == 1 ? "" : "write to the socket failed";
}
inline std::string receive_byte(int socket) {
    char b = 0;
    return ::read(socket, &b, 1) == 1 ? "" : "the other side closed the socket";
}

inline void expect_both_ok(const std::pair<SideResult, SideResult>& r) {
    EXPECT_EQ(r.first.code, 0) << "exporter: " << r.first.message;
    EXPECT_EQ(r.second.code, 0) << "importer: " << r.second.message;
}

// `bytes` bytes that depend on `seed` and their position: what one side
// writes and the other checks.
inline std::vector<std::uint8_t> byte_pattern(std::size_t bytes, std::uint8_t seed) {
    std::vector<std::uint8_t> v(bytes);
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<std::uint8_t>(seed + i * 7);
    return v;
}

// Empty when `got` is byte_pattern(bytes, seed); otherwise `what`, the
// first byte that differs and both sizes.
inline std::string pattern_mismatch(const std::vector<std::uint8_t>& got, std::size_t bytes, std::uint8_t seed,
                                    const std::string& what) {
    const std::vector<std::uint8_t> want = byte_pattern(bytes, seed);
    if (got == want) return "";
    std::size_t i = 0;
    while (i < got.size() && i < want.size() && got[i] == want[i]) ++i;
    return what + ": the bytes differ from the other side's at byte " + std::to_string(i) + " (" +
           std::to_string(got.size()) + " read, " + std::to_string(want.size()) + " written)";
}

}  // namespace keel::testing

// In a side: returns the step's failure, if any.
#define IPC_SIDE_STEP(expr)                          \
    do {                                             \
        std::string ipc_step = (expr);               \
        if (!ipc_step.empty()) return ipc_step;      \
    } while (0)

// In a side: `decl` = the value of a Result expression, or return its error.
#define IPC_SIDE_ASSIGN(decl, expr) IPC_SIDE_ASSIGN_IMPL(KEEL_CONCAT(ipc_side_tmp_, __LINE__), decl, expr)
#define IPC_SIDE_ASSIGN_IMPL(tmp, decl, expr)                                               \
    auto tmp = (expr);                                                                      \
    if (!tmp.ok()) return std::string(#expr " failed: ") + tmp.error().message();           \
    decl = std::move(tmp).value()
#define IPC_SIDE_OK(expr)                                                                   \
    do {                                                                                    \
        auto ipc_side_r = (expr);                                                           \
        if (!ipc_side_r.ok()) return std::string(#expr " failed: ") + ipc_side_r.error().message(); \
    } while (0)
#define IPC_SIDE_EXPECT(cond, message)                                                      \
    do {                                                                                    \
        if (!(cond)) return std::string("expected " #cond ": ") + (message);                \
    } while (0)
