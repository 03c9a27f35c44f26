#include "mirror_pool.hpp"

#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>

#include <bit>
#include <cstdlib>
#include <map>
#include <mutex>
#include <new>

namespace keel_torch {
namespace {

// Buffers by capacity (powers of two from 4 KiB), at most kKeptBytes in all.
constexpr std::size_t kKeptBytes = std::size_t{64} << 20;
constexpr std::size_t kMinBuffer = std::size_t{4} << 10;
constexpr std::size_t kAlignment = 64;  // as PyTorch's CPU allocator

struct Pool {
    std::mutex mutex;
    std::multimap<std::size_t, void*> free;  // capacity -> buffer
    std::size_t kept = 0;
};

Pool& pool() {
    static Pool* instance = new Pool();  // never destroyed: storages may be freed at exit
    return *instance;
}

std::size_t capacity_for(std::size_t bytes) { return std::bit_ceil(std::max(bytes, kMinBuffer)); }

struct Buffer {
    void* data;
    std::size_t capacity;
};

void release(void* context) {
    auto* buffer = static_cast<Buffer*>(context);
    Pool& p = pool();
    {
        std::lock_guard lock(p.mutex);
        if (p.kept + buffer->capacity <= kKeptBytes) {
            p.free.emplace(buffer->capacity, buffer->data);
            p.kept += buffer->capacity;
            delete buffer;
            return;
        }
    }
    std::free(buffer->data);
    delete buffer;
}

// An allocator so that a kernel may resize a mirror (out= arguments).
class MirrorAllocator final : public c10::Allocator {
public:
    c10::DataPtr allocate(std::size_t bytes) const override {
        const std::size_t capacity = capacity_for(bytes);
        void* data = nullptr;
        {
            Pool& p = pool();
            std::lock_guard lock(p.mutex);
            if (auto found = p.free.find(capacity); found != p.free.end()) {
                data = found->second;
                p.free.erase(found);
                p.kept -= capacity;
            }
        }
        if (data == nullptr) {
            data = std::aligned_alloc(kAlignment, capacity);
            if (data == nullptr) throw std::bad_alloc();
        }
        return {data, new Buffer{data, capacity}, &release, c10::Device(c10::DeviceType::CPU)};
    }
    c10::DeleterFnPtr raw_deleter() const override { return nullptr; }
};

MirrorAllocator& allocator() {
    static MirrorAllocator instance;
    return instance;
}

}  // namespace

c10::Storage mirror_storage(std::size_t bytes) {
    return c10::Storage(c10::Storage::use_byte_size_t(), bytes, &allocator(), /*resizable=*/true);
}

}  // namespace keel_torch
