// What the multi-process comm tests set up around their ranks: a free TCP
// port, a redis-server of a test's own, and two network namespaces joined
// by a veth pair (two "hosts"). Each cleans up when it goes.
#pragma once

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <netinet/in.h>
#include <string>
#include <sys/socket.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace keel::testing {

// A TCP port nothing listens on now (0 when none could be found).
inline int free_port() {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
        ::close(fd);
        return 0;
    }
    ::close(fd);
    return ntohs(addr.sin_port);
}

inline bool redis_installed() { return std::system("command -v redis-server >/dev/null 2>&1") == 0; }

// A redis-server of the test's own on a free port, stopped with the object.
struct RedisServer {
    int port = 0;
    pid_t pid = -1;
    RedisServer() = default;
    RedisServer(const RedisServer&) = delete;
    RedisServer& operator=(const RedisServer&) = delete;
    ~RedisServer() {
        if (pid > 0) {
            ::kill(pid, SIGTERM);
            ::waitpid(pid, nullptr, 0);
        }
    }
    // What redis-cli answers to `command`, without the trailing newline.
    std::string cli(const std::string& command) const {
        std::string out;
        FILE* p = ::popen(("redis-cli -p " + std::to_string(port) + " " + command + " 2>/dev/null").c_str(), "r");
        if (p == nullptr) return out;
        char buf[256];
        while (std::fgets(buf, sizeof buf, p) != nullptr) out += buf;
        ::pclose(p);
        while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
        return out;
    }
    // Starts it and waits until it answers (the ranks' first store call
    // would fail before).
    bool start() {
        port = free_port();
        pid = ::fork();
        if (pid == 0) {
            if (std::freopen("/dev/null", "w", stdout) == nullptr) ::_exit(126);
            ::execlp("redis-server", "redis-server", "--port", std::to_string(port).c_str(), "--bind", "127.0.0.1",
                     "--save", "", "--appendonly", "no", static_cast<char*>(nullptr));
            ::_exit(127);
        }
        for (int i = 0; i < 200; ++i) {
            if (cli("ping") == "PONG") return true;
            std::this_thread::sleep_for(std::chrono::milliseconds(25));
        }
        return false;
    }
    std::string store() const { return "redis:127.0.0.1:" + std::to_string(port); }
};

// Declares `server`, started, or skips the test where redis-server is missing.
#define KEEL_START_REDIS(server)                                                                  \
    if (!::keel::testing::redis_installed())                                                      \
        GTEST_SKIP() << "redis-server is not installed (Debian: redis-server)";                   \
    ::keel::testing::RedisServer server;                                                          \
    ASSERT_TRUE(server.start()) << "redis-server did not start on port " << server.port

// Two network namespaces joined by a veth pair, <subnet>.1 in the first and
// <subnet>.2 in the second, loopback up in both: two hosts on one machine.
// Needs root and `ip netns`: up() says why not otherwise.
struct TwoHosts {
    std::string ns[2], iface[2];
    bool created[2] = {false, false};
    TwoHosts(const std::string& tag, const std::string& subnet) : subnet_(subnet) {
        const std::string id = std::to_string(::getpid() % 100000);
        for (int i = 0; i < 2; ++i) {
            ns[i] = "keel-" + tag + (i == 0 ? "a-" : "b-") + id;
            iface[i] = "k" + tag + (i == 0 ? "a" : "b") + id;
        }
    }
    TwoHosts(const TwoHosts&) = delete;
    TwoHosts& operator=(const TwoHosts&) = delete;
    ~TwoHosts() {
        for (int i = 0; i < 2; ++i)
            if (created[i]) (void)std::system(("ip netns del " + ns[i] + " >/dev/null 2>&1").c_str());
    }
    std::string address(int host) const { return subnet_ + (host == 0 ? ".1" : ".2"); }
    // Empty when both hosts are up, else the reason they are not.
    std::string up() {
        if (::geteuid() != 0) return "needs root to create network namespaces";
        for (int i = 0; i < 2; ++i) {
            if (!sh("ip netns add " + ns[i])) return "`ip netns add` failed (no iproute2, or no namespace support)";
            created[i] = true;
        }
        if (!sh("ip link add " + iface[0] + " type veth peer name " + iface[1])) return "no veth pair";
        for (int i = 0; i < 2; ++i)
            if (!sh("ip link set " + iface[i] + " netns " + ns[i]) ||
                !sh("ip -n " + ns[i] + " addr add " + address(i) + "/24 dev " + iface[i]) ||
                !sh("ip -n " + ns[i] + " link set lo up") || !sh("ip -n " + ns[i] + " link set " + iface[i] + " up"))
                return "setting up " + ns[i] + " failed";
        return {};
    }

private:
    static bool sh(const std::string& cmd) { return std::system((cmd + " >/dev/null 2>&1").c_str()) == 0; }
    std::string subnet_;
};

}  // namespace keel::testing
