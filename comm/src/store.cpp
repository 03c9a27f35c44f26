// Store: the handle, its job scoping, and the choice of store from the
// launcher's variables. The kinds of store live in file_store.cpp,
// redis_store.cpp and tcp_store.cpp.
#include "store_functions.hpp"

#include <keel/environment.hpp>

#include <cstdlib>
#include <exception>
#include <map>
#include <mutex>
#include <string>

namespace keel {
namespace {

// "host:port" into its parts; false when the port is not 1..65535.
bool split_host_port(std::string_view s, std::string& host, int& port) {
    const auto colon = s.rfind(':');
    if (colon == std::string_view::npos || colon == 0) return false;
    const std::string digits(s.substr(colon + 1));
    char* end = nullptr;
    const long p = std::strtol(digits.c_str(), &end, 10);
    if (digits.empty() || *end != '\0' || p < 1 || p > 65535) return false;
    host = std::string(s.substr(0, colon));
    port = static_cast<int>(p);
    return true;
}

// The TCP store is hosted by rank 0 of the launcher's variables.
bool is_rank_zero() {
    const Result<RankInfo> info = rank_from_env();
    return info.ok() && info->rank == 0;
}

// One TCP store per address in a process, kept to its end: rank 0 hosts
// it for every communicator create_from_env makes (a host started per
// call would race the peers' first keys of the next communicator).
Result<Store> shared_tcp(const std::string& host, int port, bool serve, std::chrono::milliseconds timeout) {
    static std::mutex mutex;
    static auto* stores = new std::map<std::string, Store>();  // never destroyed: outlives every user
    const std::string key = host + ":" + std::to_string(port) + (serve ? ":host" : "");
    std::lock_guard guard(mutex);
    if (const auto it = stores->find(key); it != stores->end()) return it->second;
    KEEL_TRY_ASSIGN(Store store, Store::tcp(host, port, serve, timeout));
    stores->emplace(key, store);
    return store;
}

// Runs a user's store callback; what it throws comes back as UNAVAILABLE
// naming the callback, the key and the exception.
template <typename F>
auto store_callback_guard(const char* which, std::string_view key, F&& call) -> decltype(call()) {
    const auto failed = [&](const std::string& what) {
        return Error(KEEL_STATUS_UNAVAILABLE, std::string("[Store::callbacks] the ") + which +
                                                  " callback threw on key '" + std::string(key) + "': " + what);
    };
    try {
        return call();
    } catch (const std::exception& e) {
        return failed(e.what());
    } catch (...) {
        return failed("an exception that is not a std::exception");
    }
}

}  // namespace

namespace comm {
Store make_store(Store::SetFn set, Store::GetFn get, Store::EraseFn erase) {
    return Store::callbacks(std::move(set), std::move(get), std::move(erase)).value();
}

// Store::from_env with the bound on reaching a TCP store's host (the
// communicator's timeout when create_from_env asks).
Result<Store> store_from_env(std::chrono::milliseconds timeout) {
    const std::optional<std::string_view> spec = env::text(env::Var::comm_store);
    std::string host;
    int port = 0;
    Result<Store> store = Error(KEEL_STATUS_NOT_FOUND, "");
    if (!spec) {
        const auto addr = env::foreign("MASTER_ADDR");
        const auto master_port = env::foreign("MASTER_PORT");
        if (!addr || !master_port)
            return Error(KEEL_STATUS_NOT_FOUND,
                         "[Store::from_env] neither KEEL_COMM_STORE (file:<dir>, redis:<host>:<port> or "
                         "tcp:<host>:<port>; keel-launch sets it) nor MASTER_ADDR and MASTER_PORT are set");
        if (!split_host_port(std::string(*addr) + ":" + std::string(*master_port), host, port))
            return Error(KEEL_STATUS_INVALID_ARGUMENT, "[Store::from_env] MASTER_PORT='" + std::string(*master_port) +
                                                           "': expected a port 1..65535");
        store = shared_tcp(host, port, is_rank_zero(), timeout);
    } else {
        const std::string_view s = *spec;
        if (s.starts_with("file:")) {
            store = Store::file(std::string(s.substr(5)));
        } else if (s.starts_with("redis:") && split_host_port(s.substr(6), host, port)) {
            store = redis_store(host, port, timeout);
        } else if (s.starts_with("tcp:") && split_host_port(s.substr(4), host, port)) {
            store = shared_tcp(host, port, is_rank_zero(), timeout);
        } else {
            return Error(KEEL_STATUS_INVALID_ARGUMENT,
                         "[Store::from_env] KEEL_COMM_STORE='" + std::string(s) +
                             "': expected file:<dir>, redis:<host>:<port> or tcp:<host>:<port>");
        }
    }
    if (!store.ok()) return store.error();
    return store->for_job(Store::job_from_env());
}
}  // namespace comm

Store::Store(std::shared_ptr<const Functions> fns) : fns_(std::move(fns)) {}

Result<Store> Store::callbacks(SetFn set, GetFn get, EraseFn erase) {
    if (!set || !get)
        return Error(KEEL_STATUS_INVALID_ARGUMENT, "[Store::callbacks] both set and get must be given");
    // A framework's callback may throw; keel's callers (create, the gates on
    // stream threads, a destructor) must see an error, never an exception.
    SetFn guarded_set = [set = std::move(set)](std::string_view key,
                                               std::span<const std::byte> value) -> Result<void> {
        return store_callback_guard("set", key, [&] { return set(key, value); });
    };
    GetFn guarded_get = [get = std::move(get)](std::string_view key,
                                               std::chrono::milliseconds timeout) -> Result<std::vector<std::byte>> {
        return store_callback_guard("get", key, [&] { return get(key, timeout); });
    };
    EraseFn guarded_erase;
    if (erase)
        guarded_erase = [erase = std::move(erase)](std::string_view key) -> Result<void> {
            return store_callback_guard("erase", key, [&] { return erase(key); });
        };
    return Store(std::make_shared<const Functions>(
        Functions{std::move(guarded_set), std::move(guarded_get), std::move(guarded_erase)}));
}

Result<Store> Store::from_env() { return comm::store_from_env(std::chrono::seconds(30)); }

std::string Store::job_from_env() {
    if (const auto id = env::text(env::Var::comm_job_id)) return std::string(*id);
    if (const auto id = env::foreign("TORCHELASTIC_RUN_ID"); id && !id->empty() && *id != "none")
        return std::string(*id);
    if (const auto id = env::foreign("SLURM_JOB_ID"); id && !id->empty()) {
        const auto step = env::foreign("SLURM_STEP_ID");
        return std::string(*id) + (step && !step->empty() ? "." + std::string(*step) : "");
    }
    return {};
}

Store Store::for_job(std::string_view job) const {
    Store scoped = *this;
    if (!job.empty()) scoped.prefix_ += "job/" + std::string(job) + "/";
    return scoped;
}

Result<void> Store::set(std::string_view key, std::span<const std::byte> value) const {
    if (prefix_.empty()) return fns_->set(key, value);
    return fns_->set(prefix_ + std::string(key), value);
}

Result<std::vector<std::byte>> Store::get(std::string_view key, std::chrono::milliseconds timeout) const {
    if (prefix_.empty()) return fns_->get(key, timeout);
    return fns_->get(prefix_ + std::string(key), timeout);
}

Result<void> Store::erase(std::string_view key) const {
    if (!fns_->erase) return {};
    if (prefix_.empty()) return fns_->erase(key);
    return fns_->erase(prefix_ + std::string(key));
}

}  // namespace keel
