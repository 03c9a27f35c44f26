#include "socket_set.hpp"

#include <algorithm>
#include <cstdlib>
#include <dirent.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

namespace keel::comm {

SocketSet::Snapshot SocketSet::snapshot() {
    Snapshot snap;
    DIR* dir = ::opendir("/proc/self/fd");
    if (dir == nullptr) return snap;  // no /proc: abort() then ends collectives by their timeout
    const int own = ::dirfd(dir);
    while (const dirent* entry = ::readdir(dir)) {
        char* end = nullptr;
        const long fd = std::strtol(entry->d_name, &end, 10);
        if (end == entry->d_name || *end != '\0' || fd == own) continue;
        struct stat st {};
        if (::fstat(static_cast<int>(fd), &st) == 0 && S_ISSOCK(st.st_mode))
            snap.sockets.emplace_back(static_cast<int>(fd), st.st_ino);
    }
    ::closedir(dir);
    return snap;
}

SocketSet SocketSet::opened_between(const Snapshot& before, const Snapshot& after) {
    SocketSet set;
    for (const auto& s : after.sockets) {
        if (std::find(before.sockets.begin(), before.sockets.end(), s) != before.sockets.end()) continue;
        const int copy = ::fcntl(s.first, F_DUPFD_CLOEXEC, 0);
        if (copy < 0) continue;
        // Still that socket, connected, and a stream (not a listener Gloo
        // has closed and the process reused meanwhile).
        struct stat st {};
        int type = 0, listening = 1;
        socklen_t len = sizeof(int);
        sockaddr_storage peer{};
        socklen_t peer_len = sizeof(peer);
        const bool ours = ::fstat(copy, &st) == 0 && st.st_ino == s.second &&
                          ::getsockopt(copy, SOL_SOCKET, SO_TYPE, &type, &len) == 0 && type == SOCK_STREAM &&
                          ::getsockopt(copy, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) == 0 && listening == 0 &&
                          ::getpeername(copy, reinterpret_cast<sockaddr*>(&peer), &peer_len) == 0;
        if (ours)
            set.fds_.push_back(copy);
        else
            (void)::close(copy);
    }
    return set;
}

SocketSet& SocketSet::operator=(SocketSet&& other) noexcept {
    if (this != &other) {
        close_all();
        fds_ = std::move(other.fds_);
        other.fds_.clear();
    }
    return *this;
}

SocketSet::~SocketSet() { close_all(); }

void SocketSet::close_all() noexcept {
    for (int fd : fds_) (void)::close(fd);
    fds_.clear();
}

void SocketSet::shut_down() const noexcept {
    for (int fd : fds_) (void)::shutdown(fd, SHUT_RDWR);
}

}  // namespace keel::comm
