#include "written_keys.hpp"

#include <algorithm>

namespace keel::comm {

WrittenKeys::WrittenKeys(const Store& store)
    : target_(store),
      keys_(std::make_shared<Keys>()),
      recording_(Store::callbacks(
                     [store, keys = keys_](std::string_view key, std::span<const std::byte> value) -> Result<void> {
                         KEEL_TRY(store.set(key, value));
                         std::lock_guard guard(keys->mutex);
                         keys->names.emplace_back(key);
                         return {};
                     },
                     [store](std::string_view key, std::chrono::milliseconds timeout) {
                         return store.get(key, timeout);
                     },
                     [store](std::string_view key) { return store.erase(key); })
                     .value()) {}  // set and get are given: cannot fail

WrittenKeys::~WrittenKeys() {
    if (kept_ || !keys_) return;  // kept, or moved from
    std::lock_guard guard(keys_->mutex);
    for (const std::string& key : keys_->names) (void)target_.erase(key);
}

void WrittenKeys::hold(const std::string& key) {
    std::lock_guard guard(keys_->mutex);
    std::erase(keys_->names, key);
}

std::size_t WrittenKeys::count() const {
    std::lock_guard guard(keys_->mutex);
    return keys_->names.size();
}

}  // namespace keel::comm
