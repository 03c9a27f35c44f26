// Event pool IPC as Level Zero 1.x has it on Linux: zeEventPoolGetIpcHandle's
// 64 opaque bytes carry a file descriptor in their first four (as for
// memory), which the exporter sends with SCM_RIGHTS and the importer writes
// back, as its own number, before zeEventPoolOpenIpcHandle. The pool's event
// states are words of a memfd both processes map: a signal (by the host or
// by a command) in one process is what the other reads. Host waits sleep on
// the word as a futex, woken by every set_signalled; a command list waiting
// for a shared event looks again every 200 us (command_lists.cpp), as a
// device polls memory.
#include "api.hpp"
#include "fake.hpp"
#include "ipc_events.hpp"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <ctime>
#include <string>

#include <fcntl.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace fake_ze {

namespace {

constexpr const char* kPoolMemfdName = "fake-ze-event-pool";
constexpr std::uint32_t kPoolHandleMagic = 0x457a4b46;  // "FKzE"

// The fake's layout of ze_ipc_event_pool_handle_t::data.
struct PoolHandleData {
    std::int32_t fd;      // first: what applications swap for their own descriptor
    std::uint32_t magic;  // kPoolHandleMagic
    std::uint32_t count;  // events in the pool
    std::uint32_t flags;  // the pool's ze_event_pool_flags_t
};
static_assert(sizeof(PoolHandleData) <= ZE_MAX_IPC_HANDLE_SIZE);

std::size_t states_bytes(std::uint32_t count) { return page_rounded(std::size_t{count} * sizeof(std::uint32_t)); }

// The futex calls on a word shared between processes (no FUTEX_PRIVATE_FLAG).
void futex_wake_all(std::atomic<std::uint32_t>* word) {
    ::syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(word), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}
void futex_wait_while_zero(std::atomic<std::uint32_t>* word, std::chrono::nanoseconds limit) {
    timespec ts{static_cast<time_t>(limit.count() / 1'000'000'000), static_cast<long>(limit.count() % 1'000'000'000)};
    ::syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(word), FUTEX_WAIT, 0u, &ts, nullptr, 0);
}

std::unique_ptr<SharedStates> map_states(OwnedFd fd, std::size_t length) {
    void* p = ::mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
    if (p == MAP_FAILED) return nullptr;
    auto s = std::make_unique<SharedStates>();
    s->memfd = std::move(fd);
    s->words = static_cast<std::atomic<std::uint32_t>*>(p);
    s->mapped = length;
    return s;
}

}  // namespace

static_assert(std::atomic<std::uint32_t>::is_always_lock_free && sizeof(std::atomic<std::uint32_t>) == 4,
              "event states are plain words shared between processes");

SharedStates::~SharedStates() {
    if (words != nullptr) ::munmap(static_cast<void*>(words), mapped);
}

std::unique_ptr<SharedStates> make_shared_states(std::uint32_t count) {
    OwnedFd fd(::memfd_create(kPoolMemfdName, MFD_CLOEXEC));
    if (fd.get() < 0) return nullptr;
    const std::size_t length = states_bytes(count);
    if (::ftruncate(fd.get(), static_cast<off_t>(length)) != 0) return nullptr;
    std::unique_ptr<SharedStates> states = map_states(std::move(fd), length);
    // An event never created has no defined state. Intel's driver reads
    // fresh pool memory as signalled (its "signalled" is 0); so does the
    // fake, so that an importer reading an event its exporter never created
    // (which resets it) sees a signal no one sent, as it would there.
    if (states)
        for (std::uint32_t i = 0; i < count; ++i) states->words[i].store(1, std::memory_order_relaxed);
    return states;
}

bool is_signalled(const Event& e) noexcept {
    if (e.shared != nullptr) return e.shared->load(std::memory_order_acquire) != 0;
    return e.signalled;
}

void set_signalled(Event& e, bool on) noexcept {
    if (e.shared == nullptr) {
        e.signalled = on;
        return;
    }
    e.shared->store(on ? 1 : 0, std::memory_order_release);
    if (on) futex_wake_all(e.shared);
}

void wait_shared(Event& e, std::unique_lock<std::mutex>& lock, std::chrono::steady_clock::time_point deadline) {
    Driver& driver = Driver::get();
    for (;;) {
        if (is_signalled(e) || driver.lost_for(e)) return;
        const auto now = std::chrono::steady_clock::now();
        if (now >= deadline) return;
        // Woken by a signal of any process; a lost device is seen within 5 ms.
        const auto slice = std::min<std::chrono::nanoseconds>(deadline - now, std::chrono::milliseconds(5));
        std::atomic<std::uint32_t>* word = e.shared;
        lock.unlock();
        futex_wait_while_zero(word, slice);
        lock.lock();
    }
}

namespace api {

ze_result_t ZE_APICALL zeEventPoolGetIpcHandle(ze_event_pool_handle_t pool_handle, ze_ipc_event_pool_handle_t* handle) {
    FAKE_ZE_INJECT("zeEventPoolGetIpcHandle");
    if (pool_handle == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (handle == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    EventPool* pool = from_handle<EventPool>(pool_handle);
    Driver& driver = Driver::get();
    std::lock_guard lock(driver.mutex);
    if (!driver.config.ipc) return ZE_RESULT_ERROR_UNSUPPORTED_FEATURE;
    if (!pool->shared || pool->opened) return ZE_RESULT_ERROR_INVALID_SYNCHRONIZATION_OBJECT;
    // The descriptor stays the driver's (valid until zeEventPoolDestroy).
    const PoolHandleData data{pool->shared->memfd.get(), kPoolHandleMagic,
                              static_cast<std::uint32_t>(pool->events.size()), pool->flags};
    std::memset(handle->data, 0, sizeof handle->data);
    std::memcpy(handle->data, &data, sizeof data);
    return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL zeEventPoolOpenIpcHandle(ze_context_handle_t context, ze_ipc_event_pool_handle_t handle,
                                                ze_event_pool_handle_t* pool_handle) {
    FAKE_ZE_INJECT("zeEventPoolOpenIpcHandle");
    if (context == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (pool_handle == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    PoolHandleData data{};
    std::memcpy(&data, handle.data, sizeof data);
    if (data.magic != kPoolHandleMagic || data.count == 0 || data.fd < 0 ||
        (data.flags & ZE_EVENT_POOL_FLAG_IPC) == 0)
        return ZE_RESULT_ERROR_INVALID_ARGUMENT;
    const std::size_t length = states_bytes(data.count);
    if (!is_driver_memfd(data.fd, kPoolMemfdName, length)) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
    // The caller's descriptor is read, never kept: a duplicate holds the file.
    OwnedFd own(::fcntl(data.fd, F_DUPFD_CLOEXEC, 0));
    if (own.get() < 0) return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    auto p = std::make_unique<EventPool>();
    p->shared = map_states(std::move(own), length);
    if (!p->shared) return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    p->context = from_handle<Context>(context);
    p->flags = data.flags;
    p->events.assign(data.count, nullptr);
    p->opened = true;
    Driver& driver = Driver::get();
    std::lock_guard lock(driver.mutex);
    if (!driver.config.ipc) return ZE_RESULT_ERROR_UNSUPPORTED_FEATURE;
    ++p->context->objects;
    ++driver.live;
    *pool_handle = to_handle<ze_event_pool_handle_t>(p.release());
    return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL zeEventPoolCloseIpcHandle(ze_event_pool_handle_t pool_handle) {
    FAKE_ZE_INJECT("zeEventPoolCloseIpcHandle");
    if (pool_handle == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!from_handle<EventPool>(pool_handle)->opened) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
    std::unique_ptr<EventPool> p(from_handle<EventPool>(pool_handle));
    Driver& driver = Driver::get();
    std::lock_guard lock(driver.mutex);
    // Closing destroys the events opened in it, as the specification says.
    for (Event*& e : p->events) {
        if (e == nullptr) continue;
        if (e->waiters != 0 || e->signallers != 0)
            violation("zeEventPoolCloseIpcHandle of a pool whose event a pending command uses");
        delete e;
        e = nullptr;
        --driver.live;
    }
    --p->context->objects;
    --driver.live;
    return ZE_RESULT_SUCCESS;  // unmapped here
}

}  // namespace api

}  // namespace fake_ze
