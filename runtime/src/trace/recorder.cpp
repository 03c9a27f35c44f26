#include "trace/recorder.hpp"

#include "trace/session.hpp"

#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <unordered_set>
#include <utility>

namespace keel::trace {

alignas(64) std::atomic<bool> g_on{false};

namespace {

// The session that records (0: none yet); device times of it.
alignas(64) std::atomic<std::uint32_t> g_session{0};
std::atomic<bool> g_device_times{true};

// The local buffer of this thread; the registry holds it too, so that what
// a thread recorded is written even after the thread ended.
struct LocalBuffer {
    std::shared_ptr<ThreadBuffer> buffer;
    LocalBuffer() {
        try {
            buffer = std::make_shared<ThreadBuffer>();
            registry().add(buffer);
        } catch (...) {
            buffer.reset();  // out of host memory: this thread records nothing
        }
    }
    ~LocalBuffer() {
        if (buffer) buffer->alive.store(false, std::memory_order_release);
    }
};

ThreadBuffer* local_buffer() noexcept {
    thread_local LocalBuffer local;
    return local.buffer.get();
}

}  // namespace

const char* kind_name(Kind kind) noexcept {
    switch (kind) {
        case Kind::copy_h2d: return "copy h2d";
        case Kind::copy_d2h: return "copy d2h";
        case Kind::copy_d2d: return "copy d2d";
        case Kind::memset: return "memset";
        case Kind::kernel: return "kernel";
        case Kind::host_func: return "host function";
        case Kind::hold: return "hold";
        case Kind::wait_event: return "wait event";
        case Kind::wait_fence: return "wait fence";
        case Kind::record_event: return "record event";
        case Kind::fence: return "fence";
        case Kind::range: return "range";
        case Kind::alloc: return "alloc";
        case Kind::free: return "free";
        case Kind::record_stream: return "record_stream";
        case Kind::hold_release: return "hold released";
        case Kind::free_settled: return "free settled";
        case Kind::host_wait: return "wait";
        case Kind::memory_counter: return "memory";
    }
    return "?";
}

ThreadBuffer::ThreadBuffer() : chunks(new std::atomic<Record*>[kMaxChunks]) {
    for (std::size_t i = 0; i < kMaxChunks; ++i) chunks[i].store(nullptr, std::memory_order_relaxed);
}

ThreadBuffer::~ThreadBuffer() {
    for (std::size_t i = 0; i < kMaxChunks; ++i) delete[] chunks[i].load(std::memory_order_relaxed);
}

std::uint32_t current_session() noexcept { return g_session.load(std::memory_order_relaxed); }
bool device_times() noexcept { return g_device_times.load(std::memory_order_relaxed); }

void begin_session(std::uint32_t session, bool with_device_times) noexcept {
    g_device_times.store(with_device_times, std::memory_order_relaxed);
    g_session.store(session, std::memory_order_relaxed);
    g_on.store(true, std::memory_order_release);
}

void end_session() noexcept { g_on.store(false, std::memory_order_seq_cst); }

Record* append(Kind kind) noexcept {
    ThreadBuffer* b = local_buffer();
    if (b == nullptr) [[unlikely]] return nullptr;
    const std::uint32_t session = g_session.load(std::memory_order_relaxed);
    if (b->session != session) [[unlikely]] {
        // A new session starts at the front of the buffer, unless marks of
        // an older one may still write into its records.
        if (b->pending.load(std::memory_order_acquire) == 0) {
            b->head = 0;
            b->published.store(0, std::memory_order_release);
        }
        b->session = session;
    }
    const std::size_t index = b->head;
    const std::size_t c = index / ThreadBuffer::kChunkRecords;
    if (c >= ThreadBuffer::kMaxChunks) [[unlikely]] {
        b->dropped.fetch_add(1, std::memory_order_relaxed);
        return nullptr;
    }
    Record* chunk = b->chunks[c].load(std::memory_order_relaxed);
    if (chunk == nullptr) [[unlikely]] {
        chunk = new (std::nothrow) Record[ThreadBuffer::kChunkRecords];
        if (chunk == nullptr) {
            b->dropped.fetch_add(1, std::memory_order_relaxed);
            return nullptr;
        }
        b->chunks[c].store(chunk, std::memory_order_release);
    }
    b->head = index + 1;
    Record* r = &chunk[index % ThreadBuffer::kChunkRecords];
    r->host_ns = now_ns();
    r->host_end_ns.store(0, std::memory_order_relaxed);
    r->start_ns.store(0, std::memory_order_relaxed);
    r->end_ns.store(0, std::memory_order_relaxed);
    r->status.store(0, std::memory_order_relaxed);
    r->bytes = 0;
    r->a = 0;
    r->b = 0;
    r->name = nullptr;
    r->detail = nullptr;
    r->stream = 0;
    r->owner = b;
    r->session = session;
    r->kind = kind;
    r->flags = 0;
    return r;
}

void publish(Record* record) noexcept {
    ThreadBuffer* b = record->owner;
    b->published.store(b->head, std::memory_order_release);
}

void marks_pending(Record* record, int count) noexcept {
    record->owner->pending.fetch_add(count, std::memory_order_relaxed);
}

void mark_dropped(Record* record) noexcept { record->owner->pending.fetch_sub(1, std::memory_order_release); }

void mark_start(void* user_data, keel_status /*status*/) {
    auto* r = static_cast<Record*>(user_data);
    r->start_ns.store(now_ns(), std::memory_order_release);
    r->owner->pending.fetch_sub(1, std::memory_order_release);
}

void mark_end(void* user_data, keel_status status) {
    auto* r = static_cast<Record*>(user_data);
    r->status.store(status, std::memory_order_relaxed);
    r->end_ns.store(now_ns(), std::memory_order_release);
    r->owner->pending.fetch_sub(1, std::memory_order_release);
}

const char* intern(std::string_view text) {
    // Per thread first: kernels are launched by name on every call.
    thread_local std::unordered_set<std::string_view> seen;
    if (auto it = seen.find(text); it != seen.end()) return it->data();
    const char* stable = registry().intern(text);
    seen.insert(std::string_view(stable, text.size()));
    return stable;
}

void name_stream(std::atomic<std::uint32_t>& session_seen, std::uint64_t id, const std::string& device) {
    const std::uint32_t session = current_session();
    if (session_seen.load(std::memory_order_relaxed) == session) return;
    registry().name_stream(session, id, device);
    session_seen.store(session, std::memory_order_relaxed);
}

}  // namespace keel::trace
