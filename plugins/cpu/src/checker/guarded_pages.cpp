#include "guarded_pages.hpp"

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

// A fixed table, so that the fault handler reads it without locks or
// allocation. A slot is free while `begin` is 0.
struct Range {
    std::atomic<std::uintptr_t> begin{0};
    std::atomic<std::uintptr_t> end{0};
    std::atomic<std::uint64_t> id{0};
};
constexpr std::size_t kSlots = 4096;
std::array<Range, kSlots> g_ranges;
std::mutex g_slots_mu;  // serialises writers; the handler only reads

// The handler is installed on first use and removed once no range is
// guarded (at the latest when the plugin shuts down): a handler left behind
// would point into an unloaded library.
std::mutex g_handler_mu;
bool g_installed = false;  // guarded by g_handler_mu
struct sigaction g_previous_segv {};
struct sigaction g_previous_bus {};

// The stream whose host function this thread runs (0: none).
thread_local std::uint64_t t_host_function_stream = 0;

std::uint64_t page_rounded(std::uint64_t size) noexcept {
    static const std::uint64_t page = static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE));
    return (size + page - 1) / page * page;
}

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

void on_fault(int sig, siginfo_t* info, void* context) {
    const auto addr = reinterpret_cast<std::uintptr_t>(info->si_addr);
    for (const Range& r : g_ranges) {
        const std::uintptr_t begin = r.begin.load(std::memory_order_acquire);
        if (begin == 0 || addr < begin || addr >= r.end.load(std::memory_order_acquire)) continue;
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

}  // namespace

bool protect(std::byte* base, std::uint64_t size, std::uint64_t id) noexcept {
    const std::uint64_t bytes = page_rounded(size);
    std::lock_guard lock(g_slots_mu);
    install_handler();
    for (Range& r : g_ranges) {
        if (r.begin.load(std::memory_order_relaxed) != 0) continue;
        if (mprotect(base, bytes, PROT_NONE) != 0) return false;
        r.id.store(id, std::memory_order_relaxed);
        r.end.store(reinterpret_cast<std::uintptr_t>(base) + bytes, std::memory_order_relaxed);
        r.begin.store(reinterpret_cast<std::uintptr_t>(base), std::memory_order_release);
        return true;
    }
    return false;
}

void unprotect(std::byte* base, std::uint64_t size) noexcept {
    std::lock_guard lock(g_slots_mu);
    for (Range& r : g_ranges) {
        if (r.begin.load(std::memory_order_relaxed) != reinterpret_cast<std::uintptr_t>(base)) continue;
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

RunningHostFunction::RunningHostFunction(std::uint64_t stream) noexcept
    : previous_(std::exchange(t_host_function_stream, stream)) {}

RunningHostFunction::~RunningHostFunction() { t_host_function_stream = previous_; }

}  // namespace keel::cpu::guarded_pages
