// abort()'s socket discovery (comm/src/socket_set.*): a socket is the
// communicator's only when both its ends are one of its connections'. Two
// connections of the process may share a local end (Linux gives a
// connecting socket a port that a connection to another address has).
#include "socket_set.hpp"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

namespace {

sockaddr_storage end_of(int fd, bool local) {
    sockaddr_storage a{};
    socklen_t len = sizeof(a);
    const int r = local ? ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len)
                        : ::getpeername(fd, reinterpret_cast<sockaddr*>(&a), &len);
    EXPECT_EQ(r, 0);
    return a;
}

int loopback_listener() {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
    EXPECT_EQ(::listen(fd, 4), 0);
    return fd;
}

// A socket bound to local port `port` (0: any) with SO_REUSEADDR, connected
// to `listener`; -1 when the bind is refused.
int connect_from(int port, int listener) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    const int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<std::uint16_t>(port));
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
        ::close(fd);
        return -1;
    }
    const sockaddr_storage to = end_of(listener, true);
    EXPECT_EQ(::connect(fd, reinterpret_cast<const sockaddr*>(&to), sizeof(sockaddr_in)), 0);
    return fd;
}

// One byte from `from` arrives at `to` within a second.
bool carries(int from, int to) {
    const char sent = 'k';
    char got = 0;
    pollfd readable{to, POLLIN, 0};
    return ::send(from, &sent, 1, MSG_NOSIGNAL) == 1 && ::poll(&readable, 1, 1000) == 1 &&
           ::recv(to, &got, 1, 0) == 1 && got == sent;
}

TEST(CommSocketSet, ASocketSharingALocalEndWithTheCommunicatorsIsNotTaken) {
    const int listener_a = loopback_listener(), listener_b = loopback_listener();
    const int a = connect_from(0, listener_a);
    const int a_peer = ::accept(listener_a, nullptr, nullptr);
    const sockaddr_storage a_local = end_of(a, true);
    const int port = ntohs(reinterpret_cast<const sockaddr_in&>(a_local).sin_port);
    const int b = connect_from(port, listener_b);
    if (b < 0) GTEST_SKIP() << "this kernel refuses a second socket on local port " << port;
    const int b_peer = ::accept(listener_b, nullptr, nullptr);
    const sockaddr_storage b_local = end_of(b, true);
    ASSERT_EQ(std::memcmp(&a_local, &b_local, sizeof(sockaddr_in)), 0)
        << "the two connections were to share their local end";

    keel::comm::SocketSet set = keel::comm::SocketSet::with_connections({{a_local, end_of(a, false)}});
    EXPECT_EQ(set.size(), 1u) << "only the communicator's connection is its";
    set.shut_down();
    char got = 0;
    EXPECT_EQ(::recv(a_peer, &got, 1, 0), 0) << "the communicator's connection was not shut down";
    EXPECT_TRUE(carries(b, b_peer)) << "the other connection with the same local end was shut down";
    for (int fd : {a, a_peer, b, b_peer, listener_a, listener_b}) ::close(fd);
}

}  // namespace
