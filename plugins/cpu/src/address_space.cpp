#include "address_space.hpp"

#include "poison.hpp"

#include <cinttypes>
#include <cstdio>
#include <cstring>

namespace keel::cpu {

std::string hex(std::uint64_t v) {
    char buf[24];
    std::snprintf(buf, sizeof buf, "0x%016" PRIx64, v);
    return buf;
}

void fill_words(std::byte* dst, std::uint64_t size, std::uint32_t word) noexcept {
    std::uint64_t i = 0;
    for (; i + 4 <= size; i += 4) std::memcpy(dst + i, &word, 4);
    if (i < size) std::memcpy(dst + i, &word, size - i);
}

namespace {

keel_device_addr make_addr(std::uint64_t tag, std::uint32_t slot) noexcept {
    return tag | (static_cast<std::uint64_t>(slot) << kSlotShift);
}

std::string describe(const AllocationInfo& a) {
    return "allocation #" + std::to_string(a.id) + " (" + hex(a.base) + ", " + std::to_string(a.size) +
           " bytes)";
}

}  // namespace

std::optional<std::uint32_t> device_of_address(keel_device_addr addr) noexcept {
    const std::uint64_t tag = addr >> 56;
    const std::uint64_t first = kDeviceAddrTag >> 56;
    if (tag < first || tag >= first + kMaxDevices) return std::nullopt;
    return static_cast<std::uint32_t>(tag - first);
}

AddressSpace::AddressSpace(std::uint64_t total_bytes, const CheckerConfig& check, std::uint32_t device_index)
    : tag_(kDeviceAddrTag + (static_cast<std::uint64_t>(device_index) << 56)), total_(total_bytes), check_(check) {}

AddressSpace::~AddressSpace() {
    for (auto& c : chunks_) c.store(nullptr, std::memory_order_relaxed);
}

const AddressSpace::Slot* AddressSpace::slot_at(std::uint32_t index) const noexcept {
    const Chunk* chunk = chunks_[index / kChunkSlots].load(std::memory_order_acquire);
    return chunk ? &(*chunk)[index % kChunkSlots] : nullptr;
}

AddressSpace::SlotView AddressSpace::read(const Slot& s) const noexcept {
    for (;;) {
        std::uint32_t before = s.seq.load(std::memory_order_acquire);
        if (before & 1u) continue;  // a writer is mid-update (a few instructions)
        // Acquire loads (not a fence, which TSan cannot follow): the re-read
        // of `seq` cannot move above them. Plain moves on x86.
        SlotView v{s.state.load(std::memory_order_acquire), s.host.load(std::memory_order_acquire),
                   s.size.load(std::memory_order_acquire), s.id.load(std::memory_order_acquire)};
        if (s.seq.load(std::memory_order_relaxed) == before) return v;
    }
}

void AddressSpace::write(std::uint32_t index, SlotState state, std::byte* host, std::uint64_t size,
                         std::uint64_t id) {
    if (chunks_[index / kChunkSlots].load(std::memory_order_relaxed) == nullptr) {
        owned_chunks_.push_back(std::make_unique<Chunk>());
        chunks_[index / kChunkSlots].store(owned_chunks_.back().get(), std::memory_order_release);
    }
    Slot& s = (*chunks_[index / kChunkSlots].load(std::memory_order_relaxed))[index % kChunkSlots];
    std::uint32_t seq = s.seq.load(std::memory_order_relaxed);
    // Release stores: a reader that sees any new field also sees the odd `seq`.
    s.seq.store(seq + 1, std::memory_order_relaxed);
    s.state.store(state, std::memory_order_release);
    s.host.store(host, std::memory_order_release);
    s.size.store(size, std::memory_order_release);
    s.id.store(id, std::memory_order_release);
    s.seq.store(seq + 2, std::memory_order_release);
}

Result<std::uint32_t> AddressSpace::take_slot() {
    // Guarded mode never reuses a slot while unused ones remain, so a stale
    // address keeps pointing at "freed" instead of at a new allocation.
    if (!check_.guard && !free_slots_.empty()) {
        std::uint32_t s = free_slots_.back();
        free_slots_.pop_back();
        return s;
    }
    if (next_slot_ < kChunks * kChunkSlots) return next_slot_++;
    if (check_.guard && !quarantine_.empty() && free_slots_.empty()) {
        // Every slot used once: recycle the oldest freed ones.
        evict_quarantine(0);
    }
    if (!free_slots_.empty()) {
        std::uint32_t s = free_slots_.front();
        free_slots_.erase(free_slots_.begin());
        return s;
    }
    return Error(KEEL_STATUS_OUT_OF_MEMORY, "all " + std::to_string(kChunks * kChunkSlots) +
                                                " device allocation slots are in use");
}

Result<AllocationInfo> AddressSpace::allocate(std::uint64_t size, std::uint64_t id) {
    if (size == 0) return Error(KEEL_STATUS_INVALID_ARGUMENT, "size is 0");
    if (size > kMaxAllocation)
        return Error(KEEL_STATUS_OUT_OF_MEMORY, std::to_string(size) + " bytes exceed the largest allocation (" +
                                                    std::to_string(kMaxAllocation) + " bytes)");
    const std::uint64_t rounded = (size + kAllocAlignment - 1) / kAllocAlignment * kAllocAlignment;
    std::lock_guard lock(mutex_);
    const std::uint64_t used = used_.load(std::memory_order_relaxed);
    if (rounded > total_ - used)
        return Error(KEEL_STATUS_OUT_OF_MEMORY,
                     "cannot allocate " + std::to_string(size) + " bytes: " + std::to_string(total_ - used) +
                         " of " + std::to_string(total_) + " bytes free (KEEL_CPU_MEMORY_BYTES sets the total)");
    HostBlock block = HostBlock::allocate(rounded, kAllocAlignment);
    if (!block)
        return Error(KEEL_STATUS_OUT_OF_MEMORY,
                     "host memory exhausted while allocating " + std::to_string(size) + " bytes of device memory");
    KEEL_TRY_ASSIGN(std::uint32_t slot, take_slot());
    if (check_.poison) std::memset(block.get(), poison::kFreshDeviceByte, rounded);
    if (storage_.size() <= slot) storage_.resize(slot + 1);
    std::byte* host = block.get();
    storage_[slot] = std::move(block);
    write(slot, SlotState::live, host, size, id);
    used_.fetch_add(rounded, std::memory_order_relaxed);
    live_.fetch_add(1, std::memory_order_relaxed);
    return AllocationInfo{id, make_addr(tag_, slot), size};
}

Result<AllocationInfo> AddressSpace::adopt_shared(HostBlock storage, std::uint64_t size, std::uint64_t id) {
    if (size == 0 || !storage) return Error(KEEL_STATUS_INVALID_ARGUMENT, "no shared storage");
    const std::uint64_t rounded = (size + kAllocAlignment - 1) / kAllocAlignment * kAllocAlignment;
    std::lock_guard lock(mutex_);
    KEEL_TRY_ASSIGN(std::uint32_t slot, take_slot());
    if (storage_.size() <= slot) storage_.resize(slot + 1);
    if (shared_.size() <= slot) shared_.resize(slot + 1, 0);
    std::byte* host = storage.get();
    storage_[slot] = std::move(storage);
    shared_[slot] = 1;
    write(slot, SlotState::live, host, size, id);
    used_.fetch_add(rounded, std::memory_order_relaxed);
    live_.fetch_add(1, std::memory_order_relaxed);
    return AllocationInfo{id, make_addr(tag_, slot), size};
}

Result<AllocationInfo> AddressSpace::free(keel_device_addr addr) {
    if ((addr & ~(kOffsetMask | (0xFFFFFull << kSlotShift))) != tag_)
        return Error(KEEL_STATUS_INVALID_ARGUMENT, hex(addr) + " is not a device address");
    if ((addr & kOffsetMask) != 0)
        return Error(KEEL_STATUS_INVALID_ARGUMENT,
                     hex(addr) + " is inside an allocation, not the address device_alloc returned");
    const std::uint32_t slot = static_cast<std::uint32_t>((addr >> kSlotShift) & 0xFFFFF);
    std::lock_guard lock(mutex_);
    const Slot* s = slot == 0 ? nullptr : slot_at(slot);
    const SlotView v = s ? read(*s) : SlotView{SlotState::empty, nullptr, 0, 0};
    if (v.state == SlotState::freed)
        return Error(KEEL_STATUS_INVALID_ARGUMENT,
                     hex(addr) + " was already freed (allocation #" + std::to_string(v.id) + ")");
    if (v.state != SlotState::live)
        return Error(KEEL_STATUS_INVALID_ARGUMENT, hex(addr) + " is not a live device allocation");
    const AllocationInfo info{v.id, addr, v.size};
    const std::uint64_t rounded = (v.size + kAllocAlignment - 1) / kAllocAlignment * kAllocAlignment;
    const bool shared = slot < shared_.size() && shared_[slot] != 0;
    if (shared) shared_[slot] = 0;
    if (check_.poison && !shared) {
        // Keep the storage, poisoned, so an operation that already holds its
        // host pointer reads garbage instead of freed memory.
        fill_words(v.host, rounded, poison::kFreedDeviceWord);
        write(slot, SlotState::freed, v.host, v.size, v.id);
        quarantine_.push_back(slot);
        quarantine_bytes_ += rounded;
        evict_quarantine(check_.quarantine_bytes);
    } else if (check_.guard) {
        write(slot, SlotState::freed, nullptr, v.size, v.id);
        storage_[slot] = HostBlock();
        free_slots_.push_back(slot);
    } else {
        write(slot, SlotState::empty, nullptr, 0, 0);
        storage_[slot] = HostBlock();
        free_slots_.push_back(slot);
    }
    used_.fetch_sub(rounded, std::memory_order_relaxed);
    live_.fetch_sub(1, std::memory_order_relaxed);
    return info;
}

void AddressSpace::evict_quarantine(std::uint64_t keep_bytes) {
    while (quarantine_bytes_ > keep_bytes && !quarantine_.empty()) {
        const std::uint32_t slot = quarantine_.front();
        quarantine_.pop_front();
        const SlotView v = read(*slot_at(slot));
        quarantine_bytes_ -= (v.size + kAllocAlignment - 1) / kAllocAlignment * kAllocAlignment;
        // Guarded mode keeps knowing the address was freed; the storage goes.
        write(slot, check_.guard ? SlotState::freed : SlotState::empty, nullptr, check_.guard ? v.size : 0,
              check_.guard ? v.id : 0);
        storage_[slot] = HostBlock();
        free_slots_.push_back(slot);
    }
}

std::optional<AllocationInfo> AddressSpace::find_live(keel_device_addr addr) const noexcept {
    if ((addr >> 56) != (tag_ >> 56)) return std::nullopt;
    const std::uint32_t slot = static_cast<std::uint32_t>((addr >> kSlotShift) & 0xFFFFF);
    const Slot* s = slot == 0 ? nullptr : slot_at(slot);
    if (!s) return std::nullopt;
    const SlotView v = read(*s);
    if (v.state != SlotState::live) return std::nullopt;
    return AllocationInfo{v.id, make_addr(tag_, slot), v.size};
}

Result<AddressSpace::Resolved> AddressSpace::resolve(keel_device_addr addr, std::uint64_t size,
                                                    bool late_host) const {
    if ((addr >> 56) != (tag_ >> 56)) [[unlikely]] {
        if (const std::optional<std::uint32_t> other = device_of_address(addr))
            return Error(KEEL_STATUS_OUT_OF_RANGE, hex(addr) + " is memory of cpu:" + std::to_string(*other) +
                                                       ", not of cpu:" + std::to_string(device_index()) +
                                                       " (a copy between devices goes through memcpy_peer)");
        return Error(KEEL_STATUS_OUT_OF_RANGE, hex(addr) + " is not a device address (a host pointer?)");
    }
    const std::uint32_t slot = static_cast<std::uint32_t>((addr >> kSlotShift) & 0xFFFFF);
    const std::uint64_t offset = addr & kOffsetMask;
    const Slot* s = slot == 0 ? nullptr : slot_at(slot);
    const SlotView v = s ? read(*s) : SlotView{SlotState::empty, nullptr, 0, 0};
    const AllocationInfo info{v.id, make_addr(tag_, slot), v.size};
    if (v.state != SlotState::live) [[unlikely]] {
        if (v.state == SlotState::freed) {
            if (late_host && !check_.guard && v.host != nullptr && offset <= v.size && size <= v.size - offset)
                return Resolved{v.host + offset, info};  // unguarded late use: the poisoned storage
            return Error(KEEL_STATUS_OUT_OF_RANGE,
                         hex(addr) + " is in freed allocation #" + std::to_string(v.id) + " (" +
                             hex(make_addr(tag_, slot)) + ", " + std::to_string(v.size) + " bytes): use after free");
        }
        return Error(KEEL_STATUS_OUT_OF_RANGE, hex(addr) + " is not in any device allocation");
    }
    if (offset > v.size || size > v.size - offset) [[unlikely]]
        return Error(KEEL_STATUS_OUT_OF_RANGE,
                     "[" + hex(addr) + ", +" + std::to_string(size) + " bytes) runs past the end of " + describe(info));
    return Resolved{v.host + offset, info};
}

Result<std::byte*> AddressSpace::translate(keel_device_addr addr, std::uint64_t size) const {
    KEEL_TRY_ASSIGN(Resolved r, resolve(addr, size, true));
    return r.host;
}

Result<AllocationInfo> AddressSpace::locate(keel_device_addr addr, std::uint64_t size) const {
    KEEL_TRY_ASSIGN(Resolved r, resolve(addr, size, false));
    return r.info;
}

std::vector<AllocationInfo> AddressSpace::live_allocations() const {
    std::lock_guard lock(mutex_);
    std::vector<AllocationInfo> out;
    for (std::uint32_t i = 1; i < next_slot_; ++i) {
        const Slot* s = slot_at(i);
        if (!s) continue;
        const SlotView v = read(*s);
        if (v.state == SlotState::live) out.push_back({v.id, make_addr(tag_, i), v.size});
    }
    return out;
}

}  // namespace keel::cpu
