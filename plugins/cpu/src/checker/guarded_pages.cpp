#include "guarded_pages.hpp"

#include "host_memory.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <csignal>
#include <cstdlib>
#include <mutex>
#include <utility>
#include <sys/mman.h>
#include <unistd.h>

namespace keel::cpu::guarded_pages {
namespace {

enum Kind : std::uint8_t { kFreedPinned = 1, kPendingWrite = 2 };

// A fixed table, so that the fault handler reads it without locks or
// allocation. A slot is free while `begin` is 0.
struct Range {
    std::atomic<std::uintptr_t> begin{0};
    std::atomic<std::uintptr_t> end{0};
    std::atomic<std::uint64_t> id{0};  // pinned allocation (0: pageable memory)
    std::atomic<std::uint8_t> kind{0};
    // kPendingWrite: the copy.
    std::atomic<std::uintptr_t> copy_begin{0};
    std::atomic<std::uintptr_t> copy_end{0};
    std::atomic<std::uint64_t> stream{0};
    std::atomic<std::uint64_t> position{0};
    std::uint64_t serial = 0;  // which guard holds the slot (under g_slots_mu)
};
constexpr std::size_t kSlots = 4096;
std::array<Range, kSlots> g_ranges;
std::mutex g_slots_mu;  // serialises writers and HostAccess; the handler only reads
std::atomic<std::uint64_t> g_pending{0};  // slots of kind kPendingWrite in use
std::uint64_t g_next_serial = 1;          // under g_slots_mu

// A handle names a slot and the guard that held it, so that a released
// handle never touches the guard that reuses its slot.
constexpr unsigned kSlotBits = 12;
static_assert(kSlots == (std::size_t{1} << kSlotBits));
// The live pending-write slot `handle` names, if any. Under g_slots_mu.
Range* slot_of(std::uint64_t handle) noexcept {
    Range& r = g_ranges[handle & (kSlots - 1)];
    if (handle == 0 || r.serial != (handle >> kSlotBits) || r.begin.load(std::memory_order_relaxed) == 0 ||
        r.kind.load(std::memory_order_relaxed) != kPendingWrite)
        return nullptr;
    return &r;
}

// The handler is installed on first use and removed once no range is
// guarded (at the latest when the plugin shuts down): a handler left behind
// would point into an unloaded library.
std::mutex g_handler_mu;
bool g_installed = false;  // guarded by g_handler_mu
struct sigaction g_previous_segv {};
struct sigaction g_previous_bus {};

// The host function this thread runs (stream 0: none), and the pages its
// faults opened (see RunningHostFunction). Static TLS (initial-exec): the
// handler may be the first to touch them on a host thread, and the lazy
// allocation of a dlopen'ed library's TLS calls malloc, which a signal
// handler must not.
#define KEEL_SIGNAL_SAFE_TLS thread_local __attribute__((tls_model("initial-exec")))
KEEL_SIGNAL_SAFE_TLS std::uint64_t t_host_function_stream = 0;
KEEL_SIGNAL_SAFE_TLS std::uint64_t t_host_function_position = 0;
constexpr int kOpenedMax = 16;
KEEL_SIGNAL_SAFE_TLS std::uintptr_t t_opened[kOpenedMax];
KEEL_SIGNAL_SAFE_TLS int t_opened_count = 0;
#undef KEEL_SIGNAL_SAFE_TLS

std::uintptr_t page_size() noexcept {
    static const std::uintptr_t page = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
    return page;
}
std::uint64_t page_rounded(std::uint64_t size) noexcept { return (size + page_size() - 1) / page_size() * page_size(); }

// ---- async-signal-safe output ----------------------------------------------

class Message {
public:
    Message& text(const char* s) noexcept {
        while (*s != '\0' && n_ < sizeof(buf_)) buf_[n_++] = *s++;
        return *this;
    }
    Message& number(std::uint64_t v) noexcept {
        char digits[20];
        int k = 0;
        do {
            digits[k++] = static_cast<char>('0' + v % 10);
            v /= 10;
        } while (v != 0);
        while (k > 0 && n_ < sizeof(buf_)) buf_[n_++] = digits[--k];
        return *this;
    }
    Message& hex(std::uintptr_t v) noexcept {
        text("0x");
        bool started = false;
        for (int shift = 60; shift >= 0; shift -= 4) {
            const unsigned d = static_cast<unsigned>(v >> shift) & 0xF;
            if (d == 0 && !started && shift != 0) continue;
            started = true;
            if (n_ < sizeof(buf_)) buf_[n_++] = "0123456789abcdef"[d];
        }
        return *this;
    }
    void write_to_stderr() const noexcept {
        std::size_t done = 0;
        while (done < n_) {
            const ssize_t w = ::write(STDERR_FILENO, buf_ + done, n_ - done);
            if (w <= 0) return;
            done += static_cast<std::size_t>(w);
        }
    }

private:
    char buf_[512];
    std::size_t n_ = 0;
};

void forward(int sig, siginfo_t* info, void* context, const struct sigaction& previous) {
    if ((previous.sa_flags & SA_SIGINFO) != 0 && previous.sa_sigaction != nullptr) {
        previous.sa_sigaction(sig, info, context);
    } else if (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN) {
        previous.sa_handler(sig);
    } else {
        // Returning re-executes the access, which now faults with the
        // default action.
        sigaction(sig, &previous, nullptr);
    }
}

// A host function of the copy's own stream, enqueued before the copy, runs
// before it: its touch is legal. The page stays open until it returns.
bool open_for_host_function(const Range& r, std::uintptr_t addr) noexcept {
    if (t_host_function_stream == 0 || t_host_function_stream != r.stream.load(std::memory_order_relaxed) ||
        t_host_function_position >= r.position.load(std::memory_order_relaxed))
        return false;
    const std::uintptr_t page = addr & ~(page_size() - 1);
    if (mprotect(reinterpret_cast<void*>(page), page_size(), PROT_READ | PROT_WRITE) != 0) return false;
    if (t_opened_count < kOpenedMax) t_opened[t_opened_count++] = page;  // else it stays open
    return true;
}

void report_pending_write(const Range& r, std::uintptr_t addr) noexcept {
    Message m;
    const std::uint64_t pinned = r.id.load(std::memory_order_relaxed);
    const std::uintptr_t copy_begin = r.copy_begin.load(std::memory_order_relaxed);
    m.text("keel cpu checker: host access to the destination of a pending device-to-host copy: memcpy_d2h #")
        .number(r.position.load(std::memory_order_relaxed))
        .text(" on stream ")
        .number(r.stream.load(std::memory_order_relaxed))
        .text(" writes [")
        .hex(copy_begin)
        .text(", +")
        .number(r.copy_end.load(std::memory_order_relaxed) - copy_begin)
        .text(" bytes) (");
    if (pinned != 0) m.text("pinned allocation #").number(pinned);
    else m.text("pageable memory");
    m.text("), and ");
    if (t_host_function_stream != 0) m.text("a host function of stream ").number(t_host_function_stream);
    else m.text("a host thread");
    m.text(" touched ")
        .hex(addr)
        .text(" before the host observed that copy's completion: wait for it first (stream_synchronize, "
              "event_synchronize or a successful query of an event recorded after the copy, "
              "HostCopy::wait); freeing or reallocating the destination before then touches it too\n");
    m.write_to_stderr();
}

void on_fault(int sig, siginfo_t* info, void* context) {
    const auto addr = reinterpret_cast<std::uintptr_t>(info->si_addr);
    for (const Range& r : g_ranges) {
        const std::uintptr_t begin = r.begin.load(std::memory_order_acquire);
        if (begin == 0 || addr < begin || addr >= r.end.load(std::memory_order_acquire)) continue;
        if (r.kind.load(std::memory_order_relaxed) == kPendingWrite) {
            if (open_for_host_function(r, addr)) return;  // re-executes the access
            report_pending_write(r, addr);
            std::abort();
        }
        Message m;
        m.text("keel cpu checker: use after free of pinned memory: allocation #")
            .number(r.id.load(std::memory_order_relaxed))
            .text(" [")
            .hex(begin)
            .text(", ")
            .hex(r.end.load(std::memory_order_relaxed))
            .text(") was freed by host_free and then touched at ")
            .hex(addr)
            .text(" by ");
        if (t_host_function_stream != 0)
            m.text("a host function of stream ").number(t_host_function_stream);
        else
            m.text("a host thread");
        m.text(" (free pinned memory only after every host function and copy that uses it has run: "
               "wait for them first, or keep the buffer alive with a hold)\n");
        m.write_to_stderr();
        std::abort();
    }
    forward(sig, info, context, sig == SIGBUS ? g_previous_bus : g_previous_segv);
}

void install_handler() noexcept {
    std::lock_guard lock(g_handler_mu);
    if (g_installed) return;
    struct sigaction action {};
    action.sa_sigaction = &on_fault;
    action.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&action.sa_mask);
    sigaction(SIGSEGV, &action, &g_previous_segv);
    sigaction(SIGBUS, &action, &g_previous_bus);
    g_installed = true;
}

// Puts the replaced handler back where ours is still the current one (one
// installed after ours chains to ours and must be left alone).
void restore(int sig, const struct sigaction& previous) noexcept {
    struct sigaction current {};
    if (sigaction(sig, nullptr, &current) == 0 && (current.sa_flags & SA_SIGINFO) != 0 &&
        current.sa_sigaction == &on_fault)
        sigaction(sig, &previous, nullptr);
}

// Calls `f(begin, end)` for the intersection of [begin, end) with every
// pending write's pages other than slot `skip`. Under g_slots_mu.
template <class F>
void for_each_pending_overlap(std::uintptr_t begin, std::uintptr_t end, const Range* skip, F&& f) {
    if (g_pending.load(std::memory_order_relaxed) == 0) return;
    for (const Range& r : g_ranges) {
        const std::uintptr_t b = r.begin.load(std::memory_order_relaxed);
        if (b == 0 || &r == skip || r.kind.load(std::memory_order_relaxed) != kPendingWrite) continue;
        const std::uintptr_t e = r.end.load(std::memory_order_relaxed);
        const std::uintptr_t lo = std::max(b, begin), hi = std::min(e, end);
        if (lo < hi) f(lo, hi);
    }
}

int set_access(std::uintptr_t begin, std::uintptr_t end, int prot) {
    return mprotect(reinterpret_cast<void*>(begin), end - begin, prot);
}

}  // namespace

bool protect(std::byte* base, std::uint64_t size, std::uint64_t id) noexcept {
    const std::uint64_t bytes = page_rounded(size);
    std::lock_guard lock(g_slots_mu);
    install_handler();
    for (Range& r : g_ranges) {
        if (r.begin.load(std::memory_order_relaxed) != 0) continue;
        if (mprotect(base, bytes, PROT_NONE) != 0) return false;
        r.id.store(id, std::memory_order_relaxed);
        r.kind.store(kFreedPinned, std::memory_order_relaxed);
        r.end.store(reinterpret_cast<std::uintptr_t>(base) + bytes, std::memory_order_relaxed);
        r.begin.store(reinterpret_cast<std::uintptr_t>(base), std::memory_order_release);
        return true;
    }
    return false;
}

void unprotect(std::byte* base, std::uint64_t size) noexcept {
    std::lock_guard lock(g_slots_mu);
    for (Range& r : g_ranges) {
        if (r.begin.load(std::memory_order_relaxed) != reinterpret_cast<std::uintptr_t>(base) ||
            r.kind.load(std::memory_order_relaxed) != kFreedPinned)
            continue;
        mprotect(base, page_rounded(size), PROT_READ | PROT_WRITE);
        r.begin.store(0, std::memory_order_release);
        return;
    }
}

void remove_handler_if_unused() noexcept {
    std::lock_guard slots(g_slots_mu);
    for (const Range& r : g_ranges)
        if (r.begin.load(std::memory_order_relaxed) != 0) return;
    std::lock_guard lock(g_handler_mu);
    if (!g_installed) return;
    restore(SIGSEGV, g_previous_segv);
    restore(SIGBUS, g_previous_bus);
    g_installed = false;
}

std::uint64_t guard_pending_write(const PendingWrite& w) noexcept {
    if (w.begin >= w.end) return 0;
    (void)page_size();  // computed here, never first in the handler
    std::lock_guard lock(g_slots_mu);
    install_handler();
    for (std::size_t i = 0; i < kSlots; ++i) {
        Range& r = g_ranges[i];
        if (r.begin.load(std::memory_order_relaxed) != 0) continue;
        if (set_access(w.begin, w.end, PROT_NONE) != 0) return 0;
        r.id.store(w.pinned_id, std::memory_order_relaxed);
        r.kind.store(kPendingWrite, std::memory_order_relaxed);
        r.copy_begin.store(w.copy_begin, std::memory_order_relaxed);
        r.copy_end.store(w.copy_end, std::memory_order_relaxed);
        r.stream.store(w.stream, std::memory_order_relaxed);
        r.position.store(w.position, std::memory_order_relaxed);
        r.end.store(w.end, std::memory_order_relaxed);
        r.begin.store(w.begin, std::memory_order_release);
        g_pending.fetch_add(1, std::memory_order_relaxed);
        r.serial = g_next_serial++;
        return r.serial << kSlotBits | i;
    }
    return 0;
}

void release_pending_write(std::uint64_t handle) noexcept {
    std::lock_guard lock(g_slots_mu);
    Range* r = slot_of(handle);
    if (r == nullptr) return;
    const std::uintptr_t begin = r->begin.load(std::memory_order_relaxed);
    const std::uintptr_t end = r->end.load(std::memory_order_relaxed);
    r->begin.store(0, std::memory_order_release);
    g_pending.fetch_sub(1, std::memory_order_relaxed);
    // Memory the program freed meanwhile may be gone: nothing to restore then.
    set_access(begin, end, PROT_READ | PROT_WRITE);
    for_each_pending_overlap(begin, end, r, [](std::uintptr_t b, std::uintptr_t e) { set_access(b, e, PROT_NONE); });
}

PageCheck check_pending_write(std::uint64_t handle) noexcept {
    std::lock_guard lock(g_slots_mu);
    const Range* r = slot_of(handle);
    if (r == nullptr) return {};
    const std::uintptr_t begin = r->begin.load(std::memory_order_relaxed);
    const std::uintptr_t end = r->end.load(std::memory_order_relaxed);
    const std::uintptr_t pages = (end - begin) / page_size();
    if (!host_memory::probe(reinterpret_cast<const void*>(begin), end - begin).ok()) {
        for (std::uintptr_t p = begin; p < end; p += page_size())
            if (!host_memory::probe(reinterpret_cast<const void*>(p), 1).ok()) return {PageState::unmapped, p};
        return {PageState::unmapped, begin};
    }
    // Mapped; each page must still be inaccessible (a readable one was
    // unmapped and mapped again, or reprotected by its new owner).
    const std::uintptr_t stride = pages <= 256 ? 1 : pages / 256;
    std::byte probe_byte;
    for (std::uintptr_t k = 0; k < pages; k += stride) {
        const std::uintptr_t p = begin + k * page_size();
        if (host_memory::read(&probe_byte, reinterpret_cast<const void*>(p), 1).ok()) return {PageState::remapped, p};
    }
    const std::uintptr_t last = end - page_size();
    if (host_memory::read(&probe_byte, reinterpret_cast<const void*>(last), 1).ok())
        return {PageState::remapped, last};
    return {};
}

HostAccess::HostAccess(const void* p, std::uint64_t size) noexcept {
    if (size == 0 || g_pending.load(std::memory_order_acquire) == 0) return;
    const auto at = reinterpret_cast<std::uintptr_t>(p);
    begin_ = at & ~(page_size() - 1);
    end_ = (at + size + page_size() - 1) & ~(page_size() - 1);
    g_slots_mu.lock();
    locked_ = true;
    for_each_pending_overlap(begin_, end_, nullptr, [&](std::uintptr_t b, std::uintptr_t e) {
        if (set_access(b, e, PROT_READ | PROT_WRITE) != 0) ok_ = false;
    });
}

HostAccess::~HostAccess() {
    if (!locked_) return;
    for_each_pending_overlap(begin_, end_, nullptr,
                             [](std::uintptr_t b, std::uintptr_t e) { set_access(b, e, PROT_NONE); });
    g_slots_mu.unlock();
}

RunningHostFunction::RunningHostFunction(std::uint64_t stream, std::uint64_t position) noexcept
    : previous_stream_(std::exchange(t_host_function_stream, stream)),
      previous_position_(std::exchange(t_host_function_position, position)) {}

RunningHostFunction::~RunningHostFunction() {
    if (t_opened_count > 0) {
        // Close what this host function's faults opened, where still guarded.
        std::lock_guard lock(g_slots_mu);
        for (int i = 0; i < t_opened_count; ++i)
            for_each_pending_overlap(t_opened[i], t_opened[i] + page_size(), nullptr,
                                     [](std::uintptr_t b, std::uintptr_t e) { set_access(b, e, PROT_NONE); });
        t_opened_count = 0;
    }
    t_host_function_stream = previous_stream_;
    t_host_function_position = previous_position_;
}

}  // namespace keel::cpu::guarded_pages
