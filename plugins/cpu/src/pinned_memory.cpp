#include "pinned_memory.hpp"

#include "address_space.hpp"  // hex()
#include "checker/guarded_pages.hpp"
#include "poison.hpp"

#include <keel/plugin/host_log.hpp>

#include <cstring>
#include <sys/mman.h>
#include <unistd.h>

namespace keel::cpu {
namespace {

std::size_t page_size() {
    static const std::size_t p = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    return p;
}

std::string ptr_hex(const void* p) { return hex(reinterpret_cast<std::uintptr_t>(p)); }

}  // namespace

PinnedMemory::~PinnedMemory() {
    for (auto& [base, block] : live_)
        if (block.locked) munlock(block.memory.get(), block.memory.size());
    for (Block& block : quarantine_) release_from_quarantine(block);
    guarded_pages::remove_handler_if_unused();
}

void PinnedMemory::release_from_quarantine(Block& block) noexcept {
    if (block.guarded) guarded_pages::unprotect(block.memory.get(), block.memory.size());
    block.guarded = false;
}

Result<void*> PinnedMemory::allocate(std::uint64_t size, std::uint64_t id) {
    if (size == 0) return Error(KEEL_STATUS_INVALID_ARGUMENT, "size is 0");
    HostBlock memory = HostBlock::allocate(size, page_size());
    if (!memory)
        return Error(KEEL_STATUS_OUT_OF_MEMORY, "host memory exhausted allocating " + std::to_string(size) +
                                                    " bytes of pinned memory");
    Block block{std::move(memory), id, false};
    if (mlock_) {
        block.locked = mlock(block.memory.get(), size) == 0;
        std::lock_guard lock(mutex_);
        if (!block.locked && !mlock_warned_) {
            mlock_warned_ = true;
            plugin::HostLog::write(KEEL_LOG_WARN,
                                   "[cpu host_alloc] mlock failed (RLIMIT_MEMLOCK?): pinned memory is "
                                   "aligned but pageable");
        }
    }
    void* ptr = block.memory.get();
    std::lock_guard lock(mutex_);
    live_ids_.insert(id);
    live_.emplace(block.memory.get(), std::move(block));
    return ptr;
}

Result<PinnedInfo> PinnedMemory::find_base(const void* ptr) const {
    std::lock_guard lock(mutex_);
    auto it = live_.find(static_cast<const std::byte*>(ptr));
    if (it == live_.end())
        return Error(KEEL_STATUS_INVALID_ARGUMENT, ptr_hex(ptr) + " is not a live host_alloc block");
    return PinnedInfo{it->second.id, it->first, it->second.memory.size()};
}

Result<PinnedInfo> PinnedMemory::free(void* ptr) {
    std::lock_guard lock(mutex_);
    auto it = live_.find(static_cast<const std::byte*>(ptr));
    if (it == live_.end())
        return Error(KEEL_STATUS_INVALID_ARGUMENT, ptr_hex(ptr) + " is not a live host_alloc block");
    Block block = std::move(it->second);
    live_.erase(it);
    live_ids_.erase(block.id);
    const PinnedInfo info{block.id, block.memory.get(), block.memory.size()};
    if (block.locked) munlock(block.memory.get(), block.memory.size());
    if (check_.poison) {
        // Poisoned and kept for a while: a copy that still reads it (a
        // use after free) moves 0xDB bytes instead of crashing or, worse,
        // reading memory the host already reused for something else. Its
        // pages are inaccessible meanwhile, so that a host function that
        // touches it stops the program with a diagnostic.
        std::memset(block.memory.get(), poison::kFreedPinnedByte, block.memory.size());
        block.guarded = guarded_pages::protect(block.memory.get(), block.memory.size(), block.id);
        quarantine_bytes_ += block.memory.size();
        quarantined_ids_.insert(block.id);
        quarantine_.push_back(std::move(block));
        while (quarantine_bytes_ > check_.quarantine_bytes && !quarantine_.empty()) {
            quarantine_bytes_ -= quarantine_.front().memory.size();
            quarantined_ids_.erase(quarantine_.front().id);
            release_from_quarantine(quarantine_.front());
            quarantine_.pop_front();
        }
    }
    return info;
}

std::optional<PinnedInfo> PinnedMemory::find_containing(const void* ptr, std::uint64_t size) const {
    const auto* p = static_cast<const std::byte*>(ptr);
    std::lock_guard lock(mutex_);
    auto it = live_.upper_bound(p);
    if (it == live_.begin()) return std::nullopt;
    --it;
    const std::byte* base = it->first;
    const std::uint64_t block_size = it->second.memory.size();
    if (p >= base + block_size) return std::nullopt;
    (void)size;  // a range that runs past the block still "uses" the block
    return PinnedInfo{it->second.id, base, block_size};
}

PinnedMemory::State PinnedMemory::state(std::uint64_t id) const {
    std::lock_guard lock(mutex_);
    if (live_ids_.count(id)) return State::live;
    return quarantined_ids_.count(id) ? State::quarantined : State::released;
}

std::uint64_t PinnedMemory::live_count() const {
    std::lock_guard lock(mutex_);
    return live_.size();
}

std::vector<PinnedInfo> PinnedMemory::live_blocks() const {
    std::lock_guard lock(mutex_);
    std::vector<PinnedInfo> out;
    for (const auto& [base, block] : live_) out.push_back({block.id, base, block.memory.size()});
    return out;
}

}  // namespace keel::cpu
