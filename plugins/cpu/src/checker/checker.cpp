#include "checker.hpp"

#include <algorithm>
#include <cstring>

namespace keel::cpu {

Result<void> Checker::before_alloc(const char* kind) {
    std::lock_guard lock(mutex_);
    std::int64_t& count = allocs_[std::strcmp(kind, "pinned") == 0 ? 1 : 0];
    if (config_.fail_alloc_after >= 0 && count >= config_.fail_alloc_after)
        return Error(KEEL_STATUS_OUT_OF_MEMORY,
                     std::string("injected ") + kind + " allocation failure (KEEL_CPU_FAIL_ALLOC_AFTER=" +
                         std::to_string(config_.fail_alloc_after) + ")");
    if (config_.fail_alloc_prob > 0.0 &&
        std::uniform_real_distribution<double>(0.0, 1.0)(alloc_rng_) < config_.fail_alloc_prob)
        return Error(KEEL_STATUS_OUT_OF_MEMORY, std::string("injected ") + kind +
                                                    " allocation failure (KEEL_CPU_FAIL_ALLOC_PROB, seed " +
                                                    std::to_string(config_.seed) + ")");
    ++count;
    return ok();
}

void Checker::on_enqueue(Op& op) {
    CheckedOp& c = *op.check;
    std::lock_guard lock(mutex_);
    c.use_key = next_key_++;
    for (std::uint64_t id : c.allocation_ids) users_[id].emplace(c.use_key, c.use);
    if (c.host_write_end != 0) {
        host_writes_.emplace(c.host_write_begin, c.host_write_end);
        longest_host_write_ = std::max(longest_host_write_, c.host_write_end - c.host_write_begin);
    }
}

void Checker::on_complete(Op& op) {
    if (!op.check || op.check->use_key == 0) return;
    CheckedOp& c = *op.check;
    std::lock_guard lock(mutex_);
    for (std::uint64_t id : c.allocation_ids) {
        auto it = users_.find(id);
        if (it == users_.end()) continue;
        it->second.erase(c.use_key);
        if (it->second.empty()) users_.erase(it);
    }
    if (c.host_write_end != 0) {
        auto [lo, hi] = host_writes_.equal_range(c.host_write_begin);
        for (auto it = lo; it != hi; ++it)
            if (it->second == c.host_write_end) {
                host_writes_.erase(it);
                break;
            }
    }
    c.use_key = 0;
}

std::optional<std::string> Checker::pending_user(std::uint64_t id) const {
    std::lock_guard lock(mutex_);
    auto it = users_.find(id);
    if (it == users_.end() || it->second.empty()) return std::nullopt;
    return it->second.begin()->second.describe();
}

bool Checker::host_range_pending_write(std::uintptr_t begin, std::uintptr_t end) const {
    std::lock_guard lock(mutex_);
    // Only ranges starting less than the longest pending range before `begin` can reach it.
    const std::uintptr_t from = begin > longest_host_write_ ? begin - longest_host_write_ : 0;
    for (auto it = host_writes_.lower_bound(from); it != host_writes_.end() && it->first < end; ++it)
        if (it->second > begin) return true;
    return false;
}

std::uint64_t Checker::fingerprint(const void* data, std::uint64_t size) noexcept {
    // FNV-1a over 8-byte words: not cryptographic, just "did these bytes change".
    const auto* p = static_cast<const unsigned char*>(data);
    std::uint64_t h = 1469598103934665603ull;
    std::uint64_t i = 0;
    for (; i + 8 <= size; i += 8) {
        std::uint64_t w;
        std::memcpy(&w, p + i, 8);
        h = (h ^ w) * 1099511628211ull;
    }
    for (; i < size; ++i) h = (h ^ p[i]) * 1099511628211ull;
    return h ^ size;
}

std::uint64_t Checker::delay_us(std::mt19937_64& rng) const {
    if (config_.delay_us == 0) return 0;
    if (!config_.delay_random) return config_.delay_us;
    return std::uniform_int_distribution<std::uint64_t>(0, config_.delay_us)(rng);
}

bool Checker::inject_op_failure(std::mt19937_64& rng) {
    if (config_.fail_op_after >= 0 && ops_.fetch_add(1, std::memory_order_relaxed) == config_.fail_op_after)
        return true;
    return config_.fail_op_prob > 0.0 &&
           std::uniform_real_distribution<double>(0.0, 1.0)(rng) < config_.fail_op_prob;
}

}  // namespace keel::cpu
