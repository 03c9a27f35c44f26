// The file store: one file per key in a directory the ranks share, written
// once (link() refuses an existing name), erased by unlink().
#include "store_functions.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
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

    Result<void> erase(std::string_view key) const {
        const fs::path target = dir / file_name_of(key);
        if (::unlink(target.c_str()) != 0 && errno != ENOENT)
            return Error(KEEL_STATUS_UNAVAILABLE,
                         "[FileStore::erase] cannot remove '" + target.string() + "': " + std::strerror(errno));
        return {};
    }
};

}  // namespace

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
    return comm::make_store([store](std::string_view k, std::span<const std::byte> v) { return store->set(k, v); },
                            [store](std::string_view k, std::chrono::milliseconds t) { return store->get(k, t); },
                            [store](std::string_view k) { return store->erase(k); });
}

}  // namespace keel
