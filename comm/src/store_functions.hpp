// What a Store is made of: its three functions. Each kind of store
// (file_store.cpp, redis_store.cpp, tcp_store.cpp) builds one.
#pragma once

#include <keel/comm.hpp>

#include <sys/time.h>

namespace keel {

struct Store::Functions {
    SetFn set;
    GetFn get;
    EraseFn erase;  // may be empty (a callbacks store without one)
};

namespace comm {
// Store's constructor is private; the kinds of store reach it through here.
[[nodiscard]] Store make_store(Store::SetFn set, Store::GetFn get, Store::EraseFn erase);
// Store::from_env, reaching a TCP store's host within `timeout` (the
// communicator's, for create_from_env).
[[nodiscard]] Result<Store> store_from_env(std::chrono::milliseconds timeout);
// Store::redis with each command's answer bounded by `timeout` (Store::redis:
// 30 s; create_from_env: the communicator's).
[[nodiscard]] Result<Store> redis_store(const std::string& host, int port, std::chrono::milliseconds timeout);
// `timeout` as the socket options and hiredis take it (at least 1 ms: a
// zero would mean no bound).
[[nodiscard]] inline timeval timeval_of(std::chrono::milliseconds timeout) noexcept {
    const long long ms = timeout.count() > 1 ? timeout.count() : 1;
    return {static_cast<time_t>(ms / 1000), static_cast<suseconds_t>((ms % 1000) * 1000)};
}
}  // namespace comm

}  // namespace keel
