// Stores that serve job after job, and ranks meeting without a shared
// store: each test starts rank processes (keel_comm_rank) against a store
// it keeps between runs (a directory, a redis-server of its own, the TCP
// store rank 0 hosts), and judges exit codes and what the store holds after.
#include "rank_runner.hpp"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <cstdio>
#include <netinet/in.h>
#include <optional>
#include <sys/socket.h>

namespace {

using namespace keel::testing;
using Env = std::vector<std::pair<std::string, std::string>>;

struct TempDir {
    std::string path;
    TempDir() : path((fs::temp_directory_path() / "keel-store-test-XXXXXX").string()) {
        EXPECT_NE(::mkdtemp(path.data()), nullptr);
    }
    ~TempDir() {
        std::error_code ec;
        fs::remove_all(path, ec);
    }
};

std::size_t files_in(const std::string& dir) {
    std::size_t n = 0;
    for ([[maybe_unused]] const auto& entry : fs::directory_iterator(dir)) ++n;
    return n;
}

// A TCP port nothing listens on now.
int free_port() {
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

// A redis-server of this test's own on a free port; stopped with the object.
struct RedisServer {
    int port = 0;
    pid_t pid = -1;
    ~RedisServer() {
        if (pid > 0) {
            ::kill(pid, SIGTERM);
            ::waitpid(pid, nullptr, 0);
        }
    }
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
};

#define START_REDIS(server)                                                                      \
    if (std::system("command -v redis-server >/dev/null 2>&1") != 0)                             \
        GTEST_SKIP() << "redis-server is not installed (Debian: redis-server)";                  \
    RedisServer server;                                                                          \
    ASSERT_TRUE(server.start()) << "redis-server did not start on port " << server.port

TEST(CommStores, AJobRunsAgainOnTheSameFileStoreDirectoryAndLeavesNoKeys) {
    TempDir dir;
    const Env env = {{"KEEL_COMM_STORE", "file:" + dir.path}};
    expect_all_zero(run_ranks("one_all_reduce", 2, ranks_upto(2), std::chrono::seconds(30), env));
    EXPECT_EQ(files_in(dir.path), 0u);
    expect_all_zero(run_ranks("one_all_reduce", 2, ranks_upto(2), std::chrono::seconds(30), env));
    EXPECT_EQ(files_in(dir.path), 0u);
}

TEST(CommStores, AJobRunsAgainOnTheSameRedisServerAndLeavesNoKeys) {
    START_REDIS(redis);
    const Env env = {{"KEEL_COMM_STORE", "redis:127.0.0.1:" + std::to_string(redis.port)}};
    expect_all_zero(run_ranks("one_all_reduce", 2, ranks_upto(2), std::chrono::seconds(30), env));
    EXPECT_EQ(redis.cli("dbsize"), "0");
    expect_all_zero(run_ranks("one_all_reduce", 2, ranks_upto(2), std::chrono::seconds(30), env));
    EXPECT_EQ(redis.cli("dbsize"), "0");
}

TEST(CommStores, TwoHundredCommunicatorsLeaveNoKeysInTheFileStore) {
    TempDir dir;
    expect_all_zero(run_ranks("many_communicators", 2, ranks_upto(2), std::chrono::seconds(170),
                              {{"KEEL_COMM_STORE", "file:" + dir.path}}));
    EXPECT_EQ(files_in(dir.path), 0u);
}

// A job killed while its ranks met leaves its keys: the next run under the
// same job id is told so at once on every rank; one under its own id runs.
TEST(CommStores, AKeyLeftByADeadJobIsReportedAsSuchAndAnotherJobIdRunsBesideIt) {
    TempDir dir;
    const Env env = {{"KEEL_COMM_STORE", "file:" + dir.path}, {"KEEL_COMM_JOB_ID", "first"}};
    const RankRun dead = run_ranks("dies_while_meeting", 2, {0}, std::chrono::seconds(3), env);
    ASSERT_EQ(dead.codes[0], -1) << "the rank was meant to wait until it was killed";
    ASSERT_GT(files_in(dir.path), 0u);
    expect_all_zero(run_ranks("stale_job", 2, ranks_upto(2), std::chrono::seconds(30), env));
    expect_all_zero(run_ranks("one_all_reduce", 2, ranks_upto(2), std::chrono::seconds(30),
                              {{"KEEL_COMM_STORE", "file:" + dir.path}, {"KEEL_COMM_JOB_ID", "second"}}));
}

TEST(CommStores, ARankClaimedTwiceOnRedisIsAFailedPrecondition) {
    START_REDIS(redis);
    const RankRun run = run_ranks("duplicate_rank", 2, {0, 1, 0}, std::chrono::seconds(30),
                                  {{"KEEL_COMM_STORE", "redis:127.0.0.1:" + std::to_string(redis.port)}});
    int refused = 0;
    for (int code : run.codes) {
        EXPECT_NE(code, -1) << "a process hung";
        refused += code == 3;
    }
    EXPECT_GE(refused, 1) << "no process was refused its rank with FAILED_PRECONDITION";
}

// torchrun's variables alone: rank 0 hosts the store at MASTER_PORT.
TEST(CommStores, RanksMeetThroughTheTcpStoreRankZeroHostsAtMasterPort) {
    const Env env = {{"KEEL_COMM_STORE", ""},  // empty is unset
                     {"MASTER_ADDR", "127.0.0.1"},
                     {"MASTER_PORT", std::to_string(free_port())}};
    expect_all_zero(run_ranks("one_all_reduce", 3, ranks_upto(3), std::chrono::seconds(30), env));
}

TEST(CommStores, AnUnreachableMasterIsAClearErrorWithinTheTimeout) {
    const Env env = {{"KEEL_COMM_STORE", ""}, {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", std::to_string(free_port())}};
    expect_all_zero(run_ranks("unreachable_store", 2, {1}, std::chrono::seconds(30), env));
}

// Two hosts as a user starts them: keel-launch in each of two network
// namespaces joined by a veth pair, two ranks each, torchrun's names, the
// TCP store at node 0's address and the interface given to keel-launch.
TEST(CommStores, KeelLaunchStartsOneJobOnTwoHostsThroughTheMaster) {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root to create network namespaces";
    const std::string id = std::to_string(::getpid() % 100000);
    const std::string ns_a = "keel-la-" + id, ns_b = "keel-lb-" + id, if_a = "kla" + id, if_b = "klb" + id;
    auto sh = [](const std::string& cmd) { return std::system((cmd + " >/dev/null 2>&1").c_str()) == 0; };
    if (!sh("ip netns add " + ns_a)) GTEST_SKIP() << "`ip netns add` failed (no iproute2, or no namespace support)";
    struct Cleanup {
        std::string a, b;
        ~Cleanup() {
            (void)std::system(("ip netns del " + a + " >/dev/null 2>&1").c_str());
            (void)std::system(("ip netns del " + b + " >/dev/null 2>&1").c_str());
        }
    } cleanup{ns_a, ns_b};
    ASSERT_TRUE(sh("ip netns add " + ns_b));
    ASSERT_TRUE(sh("ip link add " + if_a + " type veth peer name " + if_b));
    ASSERT_TRUE(sh("ip link set " + if_a + " netns " + ns_a) && sh("ip link set " + if_b + " netns " + ns_b));
    ASSERT_TRUE(sh("ip -n " + ns_a + " addr add 10.78.0.1/24 dev " + if_a) &&
                sh("ip -n " + ns_b + " addr add 10.78.0.2/24 dev " + if_b));
    for (const std::string& ns : {ns_a, ns_b}) ASSERT_TRUE(sh("ip -n " + ns + " link set lo up"));
    ASSERT_TRUE(sh("ip -n " + ns_a + " link set " + if_a + " up") && sh("ip -n " + ns_b + " link set " + if_b + " up"));
    const std::string master = "10.78.0.1:29500";
    auto node = [&](const std::string& ns, const std::string& iface, int node_rank) {
        return std::vector<std::string>{"ip", "netns", "exec", ns, KEEL_LAUNCH_BIN, "--nnodes", "2", "--node-rank",
                                        std::to_string(node_rank), "--master", master, "-n", "2", "--interface",
                                        iface, "--"};
    };
    // Each entry is one keel-launch (its ranks' exit codes become its own).
    expect_all_zero(run_ranks("one_all_reduce", 4, {0, 1}, std::chrono::seconds(60), {},
                              {node(ns_a, if_a, 0), node(ns_b, if_b, 1)}));
}

}  // namespace
