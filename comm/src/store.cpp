// The stores ranks meet through: callbacks (a framework's own store), a
// shared directory, and Redis through Gloo's Redis store.
#include <keel/comm.hpp>
#include <keel/environment.hpp>

#include <gloo/config.h>
#if GLOO_USE_REDIS && !defined(KEEL_COMM_NO_REDIS)
#include <gloo/rendezvous/redis_store.h>
#endif

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <thread>
#include <unistd.h>

namespace keel {
namespace {

namespace fs = std::filesystem;

// A key as a file name: '/' and other separators become '_' plus the
// character's code, so distinct keys stay distinct files.
std::string file_name_of(std::string_view key) {
    std::string name;
    for (char c : key) {
        const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                           c == '-' || c == '.';
        if (plain) {
            name += c;
        } else {
            name += '_';
            name += std::to_string(static_cast<unsigned char>(c));
        }
    }
    return name;
}

struct FileStore {
    fs::path dir;

    Result<void> set(std::string_view key, std::span<const std::byte> value) const {
        const fs::path target = dir / file_name_of(key);
        // Written under a unique name, then linked: a reader sees the whole
        // value or nothing.
        const fs::path tmp = dir / ("." + file_name_of(key) + ".tmp." + std::to_string(::getpid()) + "." +
                                    std::to_string(std::hash<std::thread::id>{}(std::this_thread::get_id())));
        {
            std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
            out.write(reinterpret_cast<const char*>(value.data()), static_cast<std::streamsize>(value.size()));
            if (!out)
                return Error(KEEL_STATUS_UNAVAILABLE,
                             "[FileStore::set] cannot write '" + tmp.string() + "': " + std::strerror(errno));
        }
        // link() fails if the key exists: values are written once, so a
        // second process claiming a rank's key is caught here.
        const int linked = ::link(tmp.c_str(), target.c_str());
        const int link_errno = errno;
        std::error_code ec;
        fs::remove(tmp, ec);
        if (linked != 0 && link_errno == EEXIST)
            return Error(KEEL_STATUS_FAILED_PRECONDITION,
                         "[FileStore::set] key '" + std::string(key) + "' is already set in '" + dir.string() + "'");
        if (linked != 0)
            return Error(KEEL_STATUS_UNAVAILABLE,
                         "[FileStore::set] cannot write '" + target.string() + "': " + std::strerror(link_errno));
        return {};
    }

    Result<std::vector<std::byte>> get(std::string_view key, std::chrono::milliseconds timeout) const {
        const fs::path target = dir / file_name_of(key);
        const auto deadline = std::chrono::steady_clock::now() + timeout;
        auto pause = std::chrono::microseconds(50);
        for (;;) {
            std::ifstream in(target, std::ios::binary);
            if (in) {
                std::vector<char> chars((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
                std::vector<std::byte> bytes(chars.size());
                std::memcpy(bytes.data(), chars.data(), chars.size());
                return bytes;
            }
            if (std::chrono::steady_clock::now() >= deadline)
                return Error(KEEL_STATUS_UNAVAILABLE, "[FileStore::get] key '" + std::string(key) +
                                                          "' not set in '" + dir.string() + "' within " +
                                                          std::to_string(timeout.count()) + " ms");
            std::this_thread::sleep_for(pause);
            pause = std::min(pause * 2, std::chrono::microseconds(10000));
        }
    }
};

}  // namespace

Store::Store(SetFn set, GetFn get)
    : set_(std::make_shared<const SetFn>(std::move(set))), get_(std::make_shared<const GetFn>(std::move(get))) {}

Result<Store> Store::callbacks(SetFn set, GetFn get) {
    if (!set || !get)
        return Error(KEEL_STATUS_INVALID_ARGUMENT, "[Store::callbacks] both set and get must be given");
    return Store(std::move(set), std::move(get));
}

Result<Store> Store::file(std::string directory) {
    std::error_code ec;
    const fs::path dir(directory);
    if (directory.empty() || !fs::is_directory(dir, ec))
        return Error(KEEL_STATUS_UNAVAILABLE,
                     "[Store::file] '" + directory + "' is not a directory (the store cannot be reached)");
    if (::access(dir.c_str(), W_OK | X_OK) != 0)
        return Error(KEEL_STATUS_UNAVAILABLE, "[Store::file] '" + directory + "' is not writable: " +
                                                  std::strerror(errno));
    auto store = std::make_shared<const FileStore>(FileStore{dir});
    return Store([store](std::string_view k, std::span<const std::byte> v) { return store->set(k, v); },
                 [store](std::string_view k, std::chrono::milliseconds t) { return store->get(k, t); });
}

Result<Store> Store::redis(std::string host, int port) {
#if GLOO_USE_REDIS && !defined(KEEL_COMM_NO_REDIS)
    std::shared_ptr<gloo::rendezvous::RedisStore> redis;
    try {
        redis = std::make_shared<gloo::rendezvous::RedisStore>(host, port);
    } catch (const std::exception& e) {
        return Error(KEEL_STATUS_UNAVAILABLE, "[Store::redis] cannot reach " + host + ":" + std::to_string(port) +
                                                  ": " + e.what());
    }
    // hiredis connections are not thread-safe: one call at a time.
    auto lock = std::make_shared<std::mutex>();
    return Store(
        [redis, lock](std::string_view k, std::span<const std::byte> v) -> Result<void> {
            std::lock_guard guard(*lock);
            try {
                redis->set(std::string(k), std::vector<char>(reinterpret_cast<const char*>(v.data()),
                                                             reinterpret_cast<const char*>(v.data()) + v.size()));
            } catch (const std::exception& e) {
                return Error(KEEL_STATUS_UNAVAILABLE, std::string("[RedisStore::set] ") + e.what());
            }
            return {};
        },
        [redis, lock](std::string_view k, std::chrono::milliseconds t) -> Result<std::vector<std::byte>> {
            // Gloo's wait polls; each poll takes the lock briefly so that
            // other threads' calls interleave.
            const auto deadline = std::chrono::steady_clock::now() + t;
            const std::vector<std::string> keys{std::string(k)};
            for (;;) {
                {
                    std::lock_guard guard(*lock);
                    try {
                        if (redis->check(keys)) {
                            std::vector<char> v = redis->get(keys[0]);
                            std::vector<std::byte> bytes(v.size());
                            std::memcpy(bytes.data(), v.data(), v.size());
                            return bytes;
                        }
                    } catch (const std::exception& e) {
                        return Error(KEEL_STATUS_UNAVAILABLE, std::string("[RedisStore::get] ") + e.what());
                    }
                }
                if (std::chrono::steady_clock::now() >= deadline)
                    return Error(KEEL_STATUS_UNAVAILABLE, "[RedisStore::get] key '" + keys[0] + "' not set within " +
                                                              std::to_string(t.count()) + " ms");
                std::this_thread::sleep_for(std::chrono::milliseconds(1));
            }
        });
#else
    (void)host;
    (void)port;
    return Error(KEEL_STATUS_UNIMPLEMENTED, "[Store::redis] this Gloo was built without Redis");
#endif
}

Result<Store> Store::from_env() {
    const std::optional<std::string_view> spec = env::text(env::Var::comm_store);
    if (!spec)
        return Error(KEEL_STATUS_NOT_FOUND, "[Store::from_env] KEEL_COMM_STORE is not set (file:<dir> or "
                                            "redis:<host>:<port>; keel-launch sets it)");
    const std::string_view s = *spec;
    if (s.starts_with("file:")) return file(std::string(s.substr(5)));
    if (s.starts_with("redis:")) {
        const std::string_view rest = s.substr(6);
        const auto colon = rest.rfind(':');
        if (colon != std::string_view::npos) {
            char* end = nullptr;
            const std::string port(rest.substr(colon + 1));
            const long p = std::strtol(port.c_str(), &end, 10);
            if (end != port.c_str() && *end == '\0' && p > 0 && p < 65536)
                return redis(std::string(rest.substr(0, colon)), static_cast<int>(p));
        }
    }
    return Error(KEEL_STATUS_INVALID_ARGUMENT, "[Store::from_env] KEEL_COMM_STORE='" + std::string(s) +
                                                   "': expected file:<dir> or redis:<host>:<port>");
}

Result<void> Store::set(std::string_view key, std::span<const std::byte> value) const { return (*set_)(key, value); }

Result<std::vector<std::byte>> Store::get(std::string_view key, std::chrono::milliseconds timeout) const {
    return (*get_)(key, timeout);
}

}  // namespace keel
