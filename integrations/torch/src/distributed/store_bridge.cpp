#include "store_bridge.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <exception>
#include <string>
#include <thread>
#include <vector>

namespace keel_torch {
namespace {

keel::Error store_error(const char* what, std::string_view key, const std::exception& e) {
    return keel::Error(KEEL_STATUS_UNAVAILABLE,
                       std::string("[c10d store] ") + what + " '" + std::string(key) + "': " + e.what());
}

}  // namespace

keel::Result<keel::Store> keel_store_of(c10::intrusive_ptr<c10d::Store> store) {
    if (!store) return keel::Error(KEEL_STATUS_INVALID_ARGUMENT, "[keel_store_of] the c10d store is null");
    // c10d's set overwrites where keel's stores refuse a second write; the
    // ranks here come from torch's own rendezvous, so no two claim one rank.
    auto set = [store](std::string_view key, std::span<const std::byte> value) -> keel::Result<void> {
        try {
            const auto* begin = reinterpret_cast<const std::uint8_t*>(value.data());
            store->set(std::string(key), std::vector<std::uint8_t>(begin, begin + value.size()));
            return {};
        } catch (const std::exception& e) {
            return store_error("set", key, e);
        }
    };
    // Polls check() instead of wait(key, timeout): a wait that times out on
    // 1.13's TCPStore leaves the server's late answer in the socket, and the
    // process's next store call (torch's own: new_group's barrier) reads it
    // as its reply. keel asks for keys that may never come (1 ms looks).
    auto get = [store](std::string_view key,
                       std::chrono::milliseconds timeout) -> keel::Result<std::vector<std::byte>> {
        try {
            const std::string k(key);
            const auto deadline = std::chrono::steady_clock::now() + timeout;
            std::chrono::microseconds pause(50);
            while (!store->check({k})) {
                const auto now = std::chrono::steady_clock::now();
                if (now >= deadline)
                    return keel::Error(KEEL_STATUS_UNAVAILABLE, "[c10d store] get '" + k + "': not set within " +
                                                                    std::to_string(timeout.count()) + " ms");
                std::this_thread::sleep_for(
                    std::min<std::chrono::steady_clock::duration>(pause, deadline - now));
                pause = std::min(pause * 2, std::chrono::microseconds(2000));
            }
            const std::vector<std::uint8_t> value = store->get(k);
            const auto* begin = reinterpret_cast<const std::byte*>(value.data());
            return std::vector<std::byte>(begin, begin + value.size());
        } catch (const std::exception& e) {
            return store_error("get", key, e);
        }
    };
    return keel::Store::callbacks(std::move(set), std::move(get));
}

}  // namespace keel_torch
