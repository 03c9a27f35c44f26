// The TCP store: one process (rank 0) hosts a key-value map on a port,
// every process talks to it over one connection. Requests and replies are
// length-prefixed: op (1 byte), key (u32 size + bytes), for set the value
// (u32 size + bytes); the reply is a status byte, for a found get the
// value. A get is polled by the client, so the host never blocks on a key.
#include "store_functions.hpp"

#include <arpa/inet.h>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fcntl.h>
#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <string>
#include <sys/socket.h>
#include <sys/time.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace keel {
namespace {

enum Op : std::uint8_t { op_set = 1, op_get = 2, op_erase = 3 };
enum Reply : std::uint8_t { reply_ok = 0, reply_exists = 1, reply_missing = 2 };

// RAII-managed move-only file descriptor.
class Fd {
public:
    Fd() = default;
    explicit Fd(int fd) noexcept : fd_(fd) {}
    Fd(Fd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
    Fd& operator=(Fd&& o) noexcept {
        std::swap(fd_, o.fd_);
        return *this;
    }
    Fd(const Fd&) = delete;
    Fd& operator=(const Fd&) = delete;
    ~Fd() {
        if (fd_ >= 0) ::close(fd_);
    }
    [[nodiscard]] int get() const noexcept { return fd_; }

private:
    int fd_ = -1;
};

bool write_all(int fd, const void* data, std::size_t size) {
    const char* p = static_cast<const char*>(data);
    while (size > 0) {
        const ssize_t n = ::send(fd, p, size, MSG_NOSIGNAL);  // a closed peer is EPIPE, never SIGPIPE
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        p += n;
        size -= static_cast<std::size_t>(n);
    }
    return true;
}

bool read_all(int fd, void* data, std::size_t size) {
    char* p = static_cast<char*>(data);
    while (size > 0) {
        const ssize_t n = ::recv(fd, p, size, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        p += n;
        size -= static_cast<std::size_t>(n);
    }
    return true;
}

// Keys and values over 64 MiB are refused: a peer speaking another
// protocol on the port must not make the host allocate gigabytes.
constexpr std::uint32_t kMaxItem = 64u << 20;

bool read_item(int fd, std::string& out) {
    std::uint32_t size = 0;
    if (!read_all(fd, &size, sizeof size) || size > kMaxItem) return false;
    out.resize(size);
    return read_all(fd, out.data(), size);
}

bool write_item(int fd, const void* data, std::size_t size) {
    const auto n = static_cast<std::uint32_t>(size);
    return write_all(fd, &n, sizeof n) && write_all(fd, data, size);
}

// The host: one thread accepts connections and answers every request (each
// is a few bytes: a key and a small value), so the host has exactly one
// thread, joined when it goes. A host that is never destroyed (the one
// create_from_env keeps for the process) leaves no finished thread behind.
// A client that stops midway through a request or a reply is dropped after
// kStall, so it cannot hold up the others for longer.
class TcpStoreHost {
public:
    static Result<std::unique_ptr<TcpStoreHost>> start(int port) {
        Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
        if (fd.get() < 0) return Error(KEEL_STATUS_UNAVAILABLE, std::string("[Store::tcp] socket: ") + std::strerror(errno));
        const int one = 1;
        ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_addr.s_addr = htonl(INADDR_ANY);
        addr.sin_port = htons(static_cast<std::uint16_t>(port));
        if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0 || ::listen(fd.get(), 128) != 0)
            return Error(KEEL_STATUS_UNAVAILABLE, "[Store::tcp] cannot host the store on port " + std::to_string(port) +
                                                      ": " + std::strerror(errno));
        int wake[2];
        if (::pipe2(wake, O_CLOEXEC) != 0)
            return Error(KEEL_STATUS_UNAVAILABLE, std::string("[Store::tcp] pipe: ") + std::strerror(errno));
        return std::unique_ptr<TcpStoreHost>(new TcpStoreHost(std::move(fd), Fd(wake[0]), Fd(wake[1])));
    }

    TcpStoreHost(const TcpStoreHost&) = delete;
    TcpStoreHost& operator=(const TcpStoreHost&) = delete;
    ~TcpStoreHost() {
        const char x = 0;
        (void)!::write(wake_write_.get(), &x, 1);
        loop_.join();
    }

private:
    static constexpr timeval kStall{5, 0};

    TcpStoreHost(Fd listener, Fd wake_read, Fd wake_write)
        : listener_(std::move(listener)), wake_read_(std::move(wake_read)), wake_write_(std::move(wake_write)),
          loop_([this] { serve(); }) {}

    // Everything below runs on loop_ only.
    void serve() {
        std::vector<Fd> clients;
        for (;;) {
            std::vector<pollfd> fds{{listener_.get(), POLLIN, 0}, {wake_read_.get(), POLLIN, 0}};
            for (const Fd& c : clients) fds.push_back({c.get(), POLLIN, 0});
            if (::poll(fds.data(), fds.size(), -1) < 0) {
                if (errno == EINTR) continue;
                return;
            }
            if (fds[1].revents != 0) return;
            // Answer before accepting: `clients` and `fds` stay in step.
            std::vector<Fd> open;
            for (std::size_t i = 0; i < clients.size(); ++i) {
                const short ready = fds[i + 2].revents;
                if (ready == 0 || ((ready & POLLIN) != 0 && answer(clients[i].get()))) open.push_back(std::move(clients[i]));
            }
            clients = std::move(open);
            if ((fds[0].revents & POLLIN) != 0) {
                const int c = ::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC);
                if (c < 0) continue;
                const int one = 1;
                ::setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                ::setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &kStall, sizeof kStall);
                ::setsockopt(c, SOL_SOCKET, SO_SNDTIMEO, &kStall, sizeof kStall);
                clients.emplace_back(c);
            }
        }
    }

    // Answers one request; false when the connection closed or spoke
    // nonsense (it is then dropped).
    bool answer(int fd) {
        std::uint8_t op = 0;
        std::string key, value;
        if (!read_all(fd, &op, 1) || !read_item(fd, key)) return false;
        std::uint8_t reply = reply_ok;
        if (op == op_set) {
            if (!read_item(fd, value)) return false;
            if (!map_.emplace(std::move(key), std::move(value)).second) reply = reply_exists;
        } else if (op == op_get) {
            const auto it = map_.find(key);
            if (it == map_.end()) reply = reply_missing;
            else value = it->second;
        } else if (op == op_erase) {
            map_.erase(key);
        } else {
            return false;
        }
        if (!write_all(fd, &reply, 1)) return false;
        return op != op_get || reply != reply_ok || write_item(fd, value.data(), value.size());
    }

    Fd listener_, wake_read_, wake_write_;
    std::map<std::string, std::string, std::less<>> map_;  // loop_'s own
    std::thread loop_;  // last: started once the members above exist
};

// Connects to host:port, retrying until `deadline` (the host may start
// after this process); each attempt bounded so an address that drops
// packets cannot outlast the deadline.
Result<Fd> connect_until(const std::string& host, int port, std::chrono::steady_clock::time_point deadline,
                         std::chrono::milliseconds timeout) {
    const std::string where = host + ":" + std::to_string(port);
    std::string last = "no attempt";
    for (;;) {
        addrinfo hints{};
        hints.ai_family = AF_UNSPEC;
        hints.ai_socktype = SOCK_STREAM;
        addrinfo* found = nullptr;
        const int gai = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found);
        if (gai != 0) {
            last = std::string("cannot resolve '") + host + "': " + ::gai_strerror(gai);
        } else {
            std::unique_ptr<addrinfo, void (*)(addrinfo*)> list(found, ::freeaddrinfo);
            for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
                Fd fd(::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol));
                if (fd.get() < 0) continue;
                int rc = ::connect(fd.get(), a->ai_addr, a->ai_addrlen);
                if (rc != 0 && errno == EINPROGRESS) {
                    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                        deadline - std::chrono::steady_clock::now());
                    pollfd p{fd.get(), POLLOUT, 0};
                    rc = ::poll(&p, 1, static_cast<int>(std::max<long long>(1, std::min<long long>(left.count(), 1000))));
                    int err = 0;
                    socklen_t len = sizeof err;
                    if (rc == 1 && ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0) {
                        rc = 0;
                    } else {
                        errno = rc == 0 ? ETIMEDOUT : err;
                        rc = -1;
                    }
                }
                if (rc == 0) {
                    const int flags = ::fcntl(fd.get(), F_GETFL);
                    ::fcntl(fd.get(), F_SETFL, flags & ~O_NONBLOCK);
                    const int one = 1;
                    ::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                    return fd;
                }
                last = std::strerror(errno);
            }
        }
        if (std::chrono::steady_clock::now() >= deadline)
            return Error(KEEL_STATUS_UNAVAILABLE, "[Store::tcp] cannot reach the store at " + where + " within " +
                                                      std::to_string(timeout.count()) +
                                                      " ms (rank 0 hosts it: MASTER_ADDR/MASTER_PORT, or "
                                                      "keel-launch --master): " + last);
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
}

// Bounds every send and receive on `fd` by `timeout`: a host that stops
// answering (stopped, or a port served by another program) is an error,
// never a wait without end.
void bound_io(int fd, std::chrono::milliseconds timeout) {
    const timeval bound = comm::timeval_of(timeout);
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &bound, sizeof bound);
    ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &bound, sizeof bound);
}

// Whether a keel TCP store answers on `fd`: a get of the empty key gets a
// one-byte reply a keel host gives.
bool answers_as_store(int fd) {
    const std::uint8_t op = op_get;
    std::uint8_t reply = 0xff;
    if (!write_all(fd, &op, 1) || !write_item(fd, "", 0) || !read_all(fd, &reply, 1)) return false;
    if (reply == reply_ok) {
        std::string value;
        return read_item(fd, value);
    }
    return reply == reply_missing;
}

// A process's connection to the store, and the host when it is rank 0.
class TcpStore {
public:
    TcpStore(std::unique_ptr<TcpStoreHost> host, Fd fd, std::string where, std::chrono::milliseconds timeout)
        : host_(std::move(host)), fd_(std::move(fd)), where_(std::move(where)), timeout_(timeout) {
        bound_io(fd_.get(), timeout_);
    }

    Result<void> set(std::string_view key, std::span<const std::byte> value) {
        KEEL_TRY_ASSIGN(const std::uint8_t reply, call("set", op_set, key, value, nullptr));
        if (reply == reply_exists)
            return Error(KEEL_STATUS_FAILED_PRECONDITION,
                         "[TcpStore::set] key '" + std::string(key) + "' is already set on " + where_);
        return {};
    }

    Result<std::vector<std::byte>> get(std::string_view key, std::chrono::milliseconds timeout) {
        const auto deadline = std::chrono::steady_clock::now() + timeout;
        auto pause = std::chrono::microseconds(50);
        for (;;) {
            std::vector<std::byte> value;
            KEEL_TRY_ASSIGN(const std::uint8_t reply, call("get", op_get, key, {}, &value));
            if (reply == reply_ok) return value;
            if (std::chrono::steady_clock::now() >= deadline)
                return Error(KEEL_STATUS_UNAVAILABLE, "[TcpStore::get] key '" + std::string(key) + "' not set on " +
                                                          where_ + " within " + std::to_string(timeout.count()) + " ms");
            std::this_thread::sleep_for(pause);
            pause = std::min(pause * 2, std::chrono::microseconds(5000));
        }
    }

    Result<void> erase(std::string_view key) {
        KEEL_TRY_ASSIGN(const std::uint8_t reply, call("erase", op_erase, key, {}, nullptr));
        (void)reply;
        return {};
    }

private:
    Result<std::uint8_t> call(const char* what, Op op, std::string_view key, std::span<const std::byte> value,
                              std::vector<std::byte>* out) {
        std::lock_guard guard(mutex_);
        const int fd = fd_.get();
        std::uint8_t reply = 0;
        bool ok = fd >= 0 && write_all(fd, &op, 1) && write_item(fd, key.data(), key.size()) &&
                  (op != op_set || write_item(fd, value.data(), value.size())) && read_all(fd, &reply, 1);
        if (ok && op == op_get && reply == reply_ok) {
            std::string bytes;
            ok = read_item(fd, bytes);
            out->resize(bytes.size());
            std::memcpy(out->data(), bytes.data(), bytes.size());
        }
        if (!ok) {
            const bool timed_out = fd >= 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
            fd_ = Fd();  // the stream is out of step: every later call fails too
            if (timed_out)
                return Error(KEEL_STATUS_UNAVAILABLE,
                             std::string("[TcpStore::") + what + "] no answer from " + where_ + " within " +
                                 std::to_string(timeout_.count()) +
                                 " ms (rank 0, which hosts it, is stuck, or the port is served by a program that is "
                                 "not a keel TCP store)");
            return Error(KEEL_STATUS_UNAVAILABLE, std::string("[TcpStore::") + what + "] lost the connection to " +
                                                      where_ + " (rank 0, which hosts it, may have ended)");
        }
        return reply;
    }

    std::unique_ptr<TcpStoreHost> host_;
    std::mutex mutex_;
    Fd fd_;
    std::string where_;
    std::chrono::milliseconds timeout_;
};

}  // namespace

Result<Store> Store::tcp(std::string host, int port, bool serve, std::chrono::milliseconds timeout) {
    if (port < 1 || port > 65535)
        return Error(KEEL_STATUS_INVALID_ARGUMENT, "[Store::tcp] port " + std::to_string(port) + ": expected 1..65535");
    if (timeout.count() <= 0) return Error(KEEL_STATUS_INVALID_ARGUMENT, "[Store::tcp] the timeout must be positive");
    std::unique_ptr<TcpStoreHost> hosted;
    if (serve) {
        Result<std::unique_ptr<TcpStoreHost>> started = TcpStoreHost::start(port);
        if (!started.ok()) {
            // Port taken: by a keel TCP store (a second process hosting it:
            // rank 0 claimed twice, or an earlier job still on the port),
            // or by another program.
            const auto probe_timeout = std::min(timeout, std::chrono::milliseconds(2000));
            Result<Fd> probe = connect_until("127.0.0.1", port, std::chrono::steady_clock::now(), probe_timeout);
            if (probe.ok()) bound_io(probe->get(), probe_timeout);
            if (probe.ok() && answers_as_store(probe->get()))
                return Error(KEEL_STATUS_FAILED_PRECONDITION,
                             "[Store::tcp] another process already hosts a keel TCP store on port " +
                                 std::to_string(port) +
                                 ": rank 0 claimed twice, or another job still runs on this port (give each job its "
                                 "own MASTER_PORT)");
            return Error(started.error().code(), started.error().message() +
                                                     " (the port is taken by another program: choose another "
                                                     "MASTER_PORT or --master port)");
        }
        hosted = std::move(*started);
    }
    KEEL_TRY_ASSIGN(Fd fd, connect_until(host, port, std::chrono::steady_clock::now() + timeout, timeout));
    auto store = std::make_shared<TcpStore>(std::move(hosted), std::move(fd),
                                            "the TCP store at " + host + ":" + std::to_string(port), timeout);
    return comm::make_store([store](std::string_view k, std::span<const std::byte> v) { return store->set(k, v); },
                            [store](std::string_view k, std::chrono::milliseconds t) { return store->get(k, t); },
                            [store](std::string_view k) { return store->erase(k); });
}

}  // namespace keel
