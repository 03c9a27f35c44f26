#include "memory/stream_registry.hpp"

#include <keel/base/no_destructor.hpp>

#include <atomic>
#include <mutex>
#include <unordered_map>

namespace keel::memory {

namespace {

struct OpenStreams {
    std::shared_mutex mu;
    std::unordered_map<keel_stream, StreamGeneration> open;
    std::atomic<StreamGeneration> next{1};
};

OpenStreams& open_streams() {
    static base::NoDestructor<OpenStreams> r;  // streams may close during static destruction
    return *r;
}

}  // namespace

StreamGeneration register_stream(keel_stream stream) {
    OpenStreams& r = open_streams();
    const StreamGeneration g = r.next.fetch_add(1, std::memory_order_relaxed);
    std::unique_lock lock(r.mu);
    r.open[stream] = g;
    return g;
}

void unregister_stream(keel_stream stream) noexcept {
    OpenStreams& r = open_streams();
    std::unique_lock lock(r.mu);
    r.open.erase(stream);
}

StreamGeneration stream_generation(keel_stream stream) noexcept {
    // No stream is never open; and no lock here, since a memory instance asks
    // while it is being made under shared_core's lock, whose holders may take
    // this registry's lock the other way round (a free ordered across devices).
    if (stream == nullptr) return 0;
    OpenStreams& r = open_streams();
    std::shared_lock lock(r.mu);
    auto it = r.open.find(stream);
    return it == r.open.end() ? 0 : it->second;
}

OpenStream keep_open(keel_stream stream, StreamGeneration generation, Match match) noexcept {
    OpenStream kept;
    if (generation == 0) {
        kept.open_ = true;  // not the runtime's to close
        return kept;
    }
    OpenStreams& r = open_streams();
    std::shared_lock lock(r.mu);
    auto it = r.open.find(stream);
    const bool open = it != r.open.end() &&
                      (match == Match::exact ? it->second == generation : it->second >= generation);
    if (!open) return kept;
    kept.open_ = true;
    kept.lock_ = std::move(lock);
    return kept;
}

}  // namespace keel::memory
