// The Redis store over hiredis: SET NX (a key is written once, so a rank
// claimed twice is refused at once with FAILED_PRECONDITION), GET polled
// until the key appears, DEL.
#include "store_functions.hpp"

#if !defined(KEEL_COMM_NO_REDIS)
#include <hiredis.h>
#endif

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace keel {

#if !defined(KEEL_COMM_NO_REDIS)
namespace {

struct ReplyFree {
    void operator()(redisReply* r) const noexcept { freeReplyObject(r); }
};
// RAII-managed hiredis reply.
using Reply = std::unique_ptr<redisReply, ReplyFree>;

struct ContextFree {
    void operator()(redisContext* c) const noexcept { redisFree(c); }
};

// One connection; hiredis contexts are not thread-safe, so one call at a
// time.
class RedisStore {
public:
    RedisStore(redisContext* context, std::string where, std::chrono::milliseconds timeout)
        : context_(context), where_(std::move(where)), timeout_(timeout) {}

    Result<void> set(std::string_view key, std::span<const std::byte> value) {
        KEEL_TRY_ASSIGN(Reply reply, command("set", "SET %b %b NX", key.data(), key.size(), value.data(), value.size()));
        // NX: a nil reply means the key was there already.
        if (reply->type == REDIS_REPLY_NIL)
            return Error(KEEL_STATUS_FAILED_PRECONDITION,
                         "[RedisStore::set] key '" + std::string(key) + "' is already set on " + where_);
        return {};
    }

    Result<std::vector<std::byte>> get(std::string_view key, std::chrono::milliseconds timeout) {
        const auto deadline = std::chrono::steady_clock::now() + timeout;
        auto pause = std::chrono::microseconds(100);
        for (;;) {
            {
                KEEL_TRY_ASSIGN(Reply reply, command("get", "GET %b", key.data(), key.size()));
                if (reply->type == REDIS_REPLY_STRING) {
                    std::vector<std::byte> bytes(reply->len);
                    std::memcpy(bytes.data(), reply->str, reply->len);
                    return bytes;
                }
            }
            if (std::chrono::steady_clock::now() >= deadline)
                return Error(KEEL_STATUS_UNAVAILABLE, "[RedisStore::get] key '" + std::string(key) +
                                                          "' not set on " + where_ + " within " +
                                                          std::to_string(timeout.count()) + " ms");
            std::this_thread::sleep_for(pause);
            pause = std::min(pause * 2, std::chrono::microseconds(5000));
        }
    }

    Result<void> erase(std::string_view key) {
        KEEL_TRY_ASSIGN(Reply reply, command("erase", "DEL %b", key.data(), key.size()));
        (void)reply;
        return {};
    }

private:
    template <class... Args>
    Result<Reply> command(const char* what, const char* format, Args... args) {
        std::lock_guard guard(mutex_);
        Reply reply(static_cast<redisReply*>(redisCommand(context_.get(), format, args...)));
        if (!reply && (context_->err == REDIS_ERR_IO && (errno == EAGAIN || errno == EWOULDBLOCK)))
            return Error(KEEL_STATUS_UNAVAILABLE, std::string("[RedisStore::") + what + "] no answer from " + where_ +
                                                      " within " + std::to_string(timeout_.count()) +
                                                      " ms (the server is stopped or overloaded)");
        if (!reply)
            return Error(KEEL_STATUS_UNAVAILABLE, std::string("[RedisStore::") + what + "] " + where_ + ": " +
                                                      (context_->errstr[0] ? context_->errstr : "no reply"));
        if (reply->type == REDIS_REPLY_ERROR)
            return Error(KEEL_STATUS_UNAVAILABLE,
                         std::string("[RedisStore::") + what + "] " + where_ + " answered: " + reply->str);
        return reply;
    }

    std::mutex mutex_;
    std::unique_ptr<redisContext, ContextFree> context_;
    std::string where_;
    std::chrono::milliseconds timeout_;
};

}  // namespace

Result<Store> comm::redis_store(const std::string& host, int port, std::chrono::milliseconds timeout) {
    const std::string where = "Redis " + host + ":" + std::to_string(port);
    // Every command waits at most `timeout` for its answer: a server that
    // stops answering (stopped, overloaded) is an error, never a wait
    // without end.
    const timeval bound = comm::timeval_of(timeout);
    redisContext* context = redisConnectWithTimeout(host.c_str(), port, bound);
    if (context == nullptr || context->err) {
        const std::string why = context ? context->errstr : "out of memory";
        if (context) redisFree(context);
        return Error(KEEL_STATUS_UNAVAILABLE, "[Store::redis] cannot reach " + where + ": " + why);
    }
    if (redisSetTimeout(context, bound) != REDIS_OK) {
        redisFree(context);
        return Error(KEEL_STATUS_UNAVAILABLE, "[Store::redis] cannot bound the commands to " + where);
    }
    auto store = std::make_shared<RedisStore>(context, where, timeout);
    return comm::make_store([store](std::string_view k, std::span<const std::byte> v) { return store->set(k, v); },
                            [store](std::string_view k, std::chrono::milliseconds t) { return store->get(k, t); },
                            [store](std::string_view k) { return store->erase(k); });
}

#else

Result<Store> comm::redis_store(const std::string& host, int port, std::chrono::milliseconds timeout) {
    (void)host;
    (void)port;
    (void)timeout;
    return Error(KEEL_STATUS_UNIMPLEMENTED, "[Store::redis] keel::comm was built without hiredis (libhiredis-dev)");
}

#endif

Result<Store> Store::redis(std::string host, int port) { return comm::redis_store(host, port, std::chrono::seconds(30)); }

}  // namespace keel
