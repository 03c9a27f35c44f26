#include "socket_set.hpp"

#include <poll.h>
#include <sys/ioctl.h>

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <unistd.h>

namespace keel::comm {
namespace {

bool same_end(const sockaddr_storage& a, const sockaddr_storage& b) {
    if (a.ss_family != b.ss_family) return false;
    if (a.ss_family == AF_INET) {
        const auto& x = reinterpret_cast<const sockaddr_in&>(a);
        const auto& y = reinterpret_cast<const sockaddr_in&>(b);
        return x.sin_port == y.sin_port && x.sin_addr.s_addr == y.sin_addr.s_addr;
    }
    if (a.ss_family == AF_INET6) {
        const auto& x = reinterpret_cast<const sockaddr_in6&>(a);
        const auto& y = reinterpret_cast<const sockaddr_in6&>(b);
        return x.sin6_port == y.sin6_port && std::memcmp(&x.sin6_addr, &y.sin6_addr, sizeof(in6_addr)) == 0;
    }
    return false;
}

bool any_local_end_is(const std::vector<Connection>& connections, const sockaddr_storage& end) {
    return std::any_of(connections.begin(), connections.end(),
                       [&](const Connection& c) { return same_end(c.local, end); });
}

// The connection of `connections` that `fd` is (a connected stream
// socket, both ends), or null.
const Connection* which_of(int fd, const std::vector<Connection>& connections) {
    int type = 0, listening = 1;
    socklen_t len = sizeof(int);
    if (::getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0 || type != SOCK_STREAM) return nullptr;
    len = sizeof(int);
    if (::getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) != 0 || listening != 0) return nullptr;
    sockaddr_storage local{}, remote{};
    socklen_t local_len = sizeof(local), remote_len = sizeof(remote);
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &local_len) != 0 ||
        ::getpeername(fd, reinterpret_cast<sockaddr*>(&remote), &remote_len) != 0)
        return nullptr;
    const auto it = std::find_if(connections.begin(), connections.end(), [&](const Connection& c) {
        return same_end(c.local, local) && same_end(c.remote, remote);
    });
    return it == connections.end() ? nullptr : &*it;
}

}  // namespace

SocketSet SocketSet::with_connections(const std::vector<Connection>& connections) {
    SocketSet set;
    DIR* dir = ::opendir("/proc/self/fd");
    if (dir == nullptr) return set;  // no /proc: abort() then ends collectives by their timeout
    const int own = ::dirfd(dir);
    while (const dirent* entry = ::readdir(dir)) {
        char* end = nullptr;
        const long number = std::strtol(entry->d_name, &end, 10);
        if (end == entry->d_name || *end != '\0' || number == own) continue;
        const int fd = static_cast<int>(number);
        // The listing is live: our own copies show up in it too.
        if (std::find(set.fds_.begin(), set.fds_.end(), fd) != set.fds_.end()) continue;
        // Another thread's descriptor is only asked its local address (no
        // effect on it, and none when it is not a socket or just closed);
        // only one with one of our local ends is duplicated.
        sockaddr_storage local{};
        socklen_t local_len = sizeof(local);
        if (::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &local_len) != 0 || !any_local_end_is(connections, local))
            continue;
        const int copy = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
        if (copy < 0) continue;
        // Judged again on the copy, both ends: the number may have been
        // reused meanwhile, and another connection may share the local end.
        if (const Connection* c = which_of(copy, connections)) {
            set.fds_.push_back(copy);
            set.peers_.push_back(c->peer);
        } else {
            (void)::close(copy);
        }
    }
    ::closedir(dir);
    return set;
}

SocketSet& SocketSet::operator=(SocketSet&& other) noexcept {
    if (this != &other) {
        close_all();
        fds_ = std::move(other.fds_);
        peers_ = std::move(other.peers_);
        other.fds_.clear();
        other.peers_.clear();
    }
    return *this;
}

SocketSet::~SocketSet() { close_all(); }

void SocketSet::close_all() noexcept {
    for (int fd : fds_) (void)::close(fd);
    fds_.clear();
    peers_.clear();
}

std::vector<int> SocketSet::wait_for_ended(int wake, std::vector<bool>& reported) const {
    // Closed by the peer with bytes still unread: the peer sent its last
    // message and left, and Gloo may still be reading it (a wait woken now
    // would fail a transfer that is about to complete). Such a connection
    // ends for this side once its bytes were read, or once nobody read any
    // for kStalled (a message no transfer here will take); looked at every
    // few ms meanwhile. A reset or an error ends it at once.
    using Clock = std::chrono::steady_clock;
    constexpr std::chrono::milliseconds kStalled{200};
    struct Draining {
        bool on = false;
        int unread = 0;
        Clock::time_point since;
    };
    std::vector<Draining> draining(fds_.size());
    for (;;) {
        std::vector<pollfd> fds{{wake, POLLIN, 0}};
        std::vector<std::size_t> index{0};
        bool any_draining = false;
        for (std::size_t i = 0; i < fds_.size(); ++i) {
            const int peer = peers_[i];
            if (peer < 0 || static_cast<std::size_t>(peer) >= reported.size() || reported[static_cast<std::size_t>(peer)])
                continue;
            if (draining[i].on) {
                any_draining = true;
                continue;
            }
            fds.push_back({fds_[i], POLLRDHUP, 0});
            index.push_back(i);
        }
        if (::poll(fds.data(), fds.size(), any_draining ? 5 : -1) < 0) {
            if (errno == EINTR) continue;
            return {};
        }
        if (fds[0].revents != 0) return {};
        const Clock::time_point now = Clock::now();
        std::vector<int> ended;
        auto end = [&](std::size_t i) {
            draining[i].on = false;
            const auto peer = static_cast<std::size_t>(peers_[i]);
            if (reported[peer]) return;
            reported[peer] = true;
            ended.push_back(peers_[i]);
        };
        for (std::size_t k = 1; k < fds.size(); ++k) {
            const short ev = fds[k].revents;
            if ((ev & (POLLHUP | POLLERR)) != 0) end(index[k]);
            else if ((ev & POLLRDHUP) != 0) draining[index[k]] = {true, -1, now};
        }
        for (std::size_t i = 0; i < fds_.size(); ++i) {
            if (!draining[i].on) continue;
            int unread = 0;
            if (::ioctl(fds_[i], FIONREAD, &unread) != 0 || unread <= 0) {
                end(i);
            } else if (unread != draining[i].unread) {
                draining[i].unread = unread;  // being read: wait on
                draining[i].since = now;
            } else if (now - draining[i].since >= kStalled) {
                end(i);
            }
        }
        if (!ended.empty()) return ended;
    }
}

std::vector<int> SocketSet::ended_peers() const {
    std::vector<int> ended;
    for (std::size_t i = 0; i < fds_.size(); ++i) {
        pollfd p{fds_[i], POLLRDHUP, 0};
        if (::poll(&p, 1, 0) == 1 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0 && peers_[i] >= 0)
            ended.push_back(peers_[i]);
    }
    std::sort(ended.begin(), ended.end());
    return ended;
}

void SocketSet::shut_down() const noexcept {
    for (int fd : fds_) (void)::shutdown(fd, SHUT_RDWR);
}

}  // namespace keel::comm
