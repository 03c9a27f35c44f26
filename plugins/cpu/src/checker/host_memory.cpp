#include "host_memory.hpp"

#include "../address_space.hpp"  // hex()

#include <algorithm>
#include <array>
#include <atomic>
#include <optional>
#include <cerrno>
#include <cstring>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

namespace keel::cpu::host_memory {
namespace {

constexpr std::uint64_t kChunk = 4u << 20;  // bytes per system call

std::uintptr_t page_size() {
    static const std::uintptr_t p = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
    return p;
}

// getpid() is a system call each time; a forked child must not use its
// parent's pid (it would read the parent's memory), hence the atfork reset.
std::atomic<pid_t> g_pid{0};

pid_t self() {
    pid_t pid = g_pid.load(std::memory_order_relaxed);
    if (pid == 0) {
        static const int registered = pthread_atfork(nullptr, nullptr, [] { g_pid.store(0); });
        (void)registered;
        pid = getpid();
        g_pid.store(pid, std::memory_order_relaxed);
    }
    return pid;
}

// process_vm_* may be refused (seccomp, ptrace policy): then fall back.
std::atomic<bool> g_vm_calls_work{true};

bool vm_call_refused(int err) { return err == ENOSYS || err == EPERM; }

// mincore() fails with ENOMEM on a range that holds unmapped pages.
bool mapped(std::uintptr_t page, std::uintptr_t pages) {
    unsigned char vec[64];
    while (pages > 0) {
        const std::uintptr_t n = std::min<std::uintptr_t>(pages, sizeof vec);
        if (mincore(reinterpret_cast<void*>(page), n * page_size(), vec) != 0) return false;
        page += n * page_size();
        pages -= n;
    }
    return true;
}

// The first page of [p, p + size) that is not mapped, if any.
std::optional<std::uintptr_t> first_unmapped_page(std::uintptr_t p, std::uint64_t size) {
    const std::uintptr_t first = p & ~(page_size() - 1);
    const std::uintptr_t last = (p + size - 1) & ~(page_size() - 1);
    for (std::uintptr_t page = first; page <= last; page += page_size())
        if (!mapped(page, 1)) return page;
    return std::nullopt;
}

Error not_mapped(std::uintptr_t p, std::uint64_t size) {
    const auto bad = first_unmapped_page(p, size);
    return Error(KEEL_STATUS_OUT_OF_RANGE,
                 "[" + hex(p) + ", +" + std::to_string(size) + " bytes) is not mapped" +
                     (bad ? " (first unmapped page " + hex(std::max<std::uintptr_t>(*bad, p)) + ")" : std::string()));
}

// One process_vm call over [remote, remote + size) <-> local; false on EFAULT.
template <bool kWrite>
Result<bool> vm_copy(std::byte* local, std::uintptr_t remote, std::uint64_t size) {
    while (size > 0) {
        const std::uint64_t n = std::min(size, kChunk);
        iovec l{local, n};
        iovec r{reinterpret_cast<void*>(remote), n};
        const ssize_t done = kWrite ? process_vm_writev(self(), &l, 1, &r, 1, 0)
                                    : process_vm_readv(self(), &l, 1, &r, 1, 0);
        if (done < 0) {
            if (errno == EINTR) continue;
            if (errno == EFAULT) return false;
            if (vm_call_refused(errno)) {
                g_vm_calls_work.store(false, std::memory_order_relaxed);
                return Error(KEEL_STATUS_UNAVAILABLE, "process_vm calls refused");
            }
            return Error(KEEL_STATUS_INTERNAL, std::string("process_vm call failed: ") + std::strerror(errno));
        }
        if (done == 0) return false;
        local += done;
        remote += static_cast<std::uintptr_t>(done);
        size -= static_cast<std::uint64_t>(done);
    }
    return true;
}

template <bool kWrite>
Result<void> copy(std::byte* local, std::uintptr_t remote, std::uint64_t size) {
    if (g_vm_calls_work.load(std::memory_order_relaxed)) {
        Result<bool> r = vm_copy<kWrite>(local, remote, size);
        if (r.ok()) {
            if (*r) return ok();
            return not_mapped(remote, size);
        }
        if (r.error().code() != KEEL_STATUS_UNAVAILABLE) return r.error();
    }
    KEEL_TRY(probe(reinterpret_cast<const void*>(remote), size));
    if (kWrite) std::memcpy(reinterpret_cast<void*>(remote), local, size);
    else std::memcpy(local, reinterpret_cast<const void*>(remote), size);
    return ok();
}

}  // namespace

Result<void> read(std::byte* dst, const void* src, std::uint64_t size) {
    return copy<false>(dst, reinterpret_cast<std::uintptr_t>(src), size);
}

Result<void> write(void* dst, const std::byte* src, std::uint64_t size) {
    return copy<true>(const_cast<std::byte*>(src), reinterpret_cast<std::uintptr_t>(dst), size);
}

Result<void> probe(const void* p, std::uint64_t size) {
    if (size == 0) return ok();
    const auto begin = reinterpret_cast<std::uintptr_t>(p);
    const std::uintptr_t first = begin & ~(page_size() - 1);
    const std::uintptr_t last = (begin + size - 1) & ~(page_size() - 1);
    if (!mapped(first, (last - first) / page_size() + 1)) return not_mapped(begin, size);
    return ok();
}

void Fingerprint::add(const std::byte* data, std::uint64_t size) noexcept {
    std::uint64_t i = 0;
    for (; i + 8 <= size; i += 8) {
        std::uint64_t w;
        std::memcpy(&w, data + i, 8);
        h_ = (h_ ^ w) * 1099511628211ull;
    }
    for (; i < size; ++i) h_ = (h_ ^ static_cast<std::uint8_t>(data[i])) * 1099511628211ull;
    size_ += size;
}

Result<std::uint64_t> fingerprint(const void* p, std::uint64_t size) {
    static constexpr std::uint64_t kBounce = 64u << 10;
    std::array<std::byte, kBounce> bounce;
    Fingerprint f;
    const auto* src = static_cast<const std::byte*>(p);
    for (std::uint64_t done = 0; done < size; done += kBounce) {
        const std::uint64_t n = std::min(kBounce, size - done);
        KEEL_TRY(read(bounce.data(), src + done, n));
        f.add(bounce.data(), n);
    }
    return f.value();
}

}  // namespace keel::cpu::host_memory
