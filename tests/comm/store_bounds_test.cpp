// The TCP and Redis stores in one process: every wait on a server is
// bounded (a port whose listener never answers is an error within the
// store's timeout), and a second TCP store host on a port is told apart from
// another program on it.
#include <keel/comm.hpp>
#include <keel/keel.hpp>
#include <keel/testing/result.hpp>

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>

#include <string>

namespace keel {
namespace {

// A socket listening on a free loopback port that accepts (the kernel's
// backlog) and never answers: a stopped host, or another program.
struct SilentListener {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    int port = 0;
    SilentListener() {
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
        EXPECT_EQ(::listen(fd, 16), 0);
        socklen_t len = sizeof addr;
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
        port = ntohs(addr.sin_port);
    }
    ~SilentListener() { ::close(fd); }
};

// Before, the first set waited for a reply without end.
TEST(CommTcpStore, AHostThatNeverAnswersIsAnErrorWithinTheTimeout) {
    SilentListener silent;
    KEEL_ASSERT_OK_AND_ASSIGN(Store store, Store::tcp("127.0.0.1", silent.port, false, std::chrono::milliseconds(300)));
    const std::byte one[1]{std::byte{1}};
    const Result<void> set = store.set("k", one);
    ASSERT_FALSE(set.ok());
    EXPECT_EQ(set.error().code(), KEEL_STATUS_UNAVAILABLE);
    EXPECT_NE(set.error().message().find("no answer from the TCP store at 127.0.0.1:" + std::to_string(silent.port) +
                                         " within 300 ms"),
              std::string::npos)
        << set.error().message();
    // The connection is out of step: later calls fail at once, saying so.
    EXPECT_FALSE(store.get("k", std::chrono::milliseconds(300)).ok());
}

// A second process hosting on the port is rank 0 claimed twice
// (FAILED_PRECONDITION, as a rank claimed twice is on every store); another
// program on it is UNAVAILABLE, naming the port. Before, both were
// "Address already in use".
TEST(CommTcpStore, ASecondHostIsAFailedPreconditionAndAnotherProgramOnThePortIsNamed) {
    SilentListener silent;
    const Result<Store> taken = Store::tcp("127.0.0.1", silent.port, true, std::chrono::milliseconds(300));
    ASSERT_FALSE(taken.ok());
    EXPECT_EQ(taken.error().code(), KEEL_STATUS_UNAVAILABLE);
    EXPECT_NE(taken.error().message().find("taken by another program"), std::string::npos) << taken.error().message();

    const int port = silent.port;
    ::close(silent.fd);
    silent.fd = -1;
    KEEL_ASSERT_OK_AND_ASSIGN(Store first, Store::tcp("127.0.0.1", port, true, std::chrono::seconds(5)));
    const Result<Store> second = Store::tcp("127.0.0.1", port, true, std::chrono::seconds(5));
    ASSERT_FALSE(second.ok());
    EXPECT_EQ(second.error().code(), KEEL_STATUS_FAILED_PRECONDITION);
    EXPECT_NE(second.error().message().find("rank 0 claimed twice"), std::string::npos) << second.error().message();
    // The first host still serves.
    const std::byte one[1]{std::byte{1}};
    KEEL_EXPECT_OK(first.set("k", one));
    KEEL_EXPECT_OK(first.get("k", std::chrono::seconds(5)));
}

// A Redis server that stops answering (SIGSTOP, overload) after the
// connection was made. Before, create_from_env waited for the first
// command's answer without end.
TEST(CommRedisStore, AServerThatNeverAnswersIsAnErrorWithinTheCommunicatorsTimeout) {
    SilentListener silent;
    const std::string spec = "redis:127.0.0.1:" + std::to_string(silent.port);
    ::setenv("KEEL_COMM_STORE", spec.c_str(), 1);
    ::setenv("RANK", "0", 1);
    ::setenv("WORLD_SIZE", "2", 1);
    const Runtime rt = Runtime::create().value();
    const Device dev = rt.device("cpu:0").value();
    CommOptions options;
    options.timeout = std::chrono::milliseconds(300);
    const Result<Communicator> comm = Communicator::create_from_env(dev, options);
    ::unsetenv("KEEL_COMM_STORE");
    ::unsetenv("RANK");
    ::unsetenv("WORLD_SIZE");
    ASSERT_FALSE(comm.ok());
    EXPECT_EQ(comm.error().code(), KEEL_STATUS_UNAVAILABLE);
    EXPECT_NE(comm.error().message().find("no answer from Redis 127.0.0.1:" + std::to_string(silent.port) +
                                          " within 300 ms"),
              std::string::npos)
        << comm.error().message();
}

}  // namespace
}  // namespace keel
