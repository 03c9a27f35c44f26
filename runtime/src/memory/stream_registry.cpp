#include "memory/stream_registry.hpp"

#include <atomic>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>

namespace keel::memory {

namespace {

struct Registry {
    std::shared_mutex mu;
    std::unordered_map<keel_stream, StreamGeneration> open;
    std::atomic<StreamGeneration> next{1};
};

Registry& registry() {
    static Registry* r = new Registry;  // never destroyed: streams may close during static destruction
    return *r;
}

}  // namespace

StreamGeneration register_stream(keel_stream stream) {
    Registry& r = registry();
    const StreamGeneration g = r.next.fetch_add(1, std::memory_order_relaxed);
    std::unique_lock lock(r.mu);
    r.open[stream] = g;
    return g;
}

void unregister_stream(keel_stream stream) noexcept {
    Registry& r = registry();
    std::unique_lock lock(r.mu);
    r.open.erase(stream);
}

StreamGeneration stream_generation(keel_stream stream) noexcept {
    Registry& r = registry();
    std::shared_lock lock(r.mu);
    auto it = r.open.find(stream);
    return it == r.open.end() ? 0 : it->second;
}

bool still_open(keel_stream stream, StreamGeneration generation) noexcept {
    return generation == 0 || stream_generation(stream) == generation;
}

}  // namespace keel::memory
