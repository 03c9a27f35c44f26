#include "diagnose/host_waits.hpp"

#include "diagnose/watchdog.hpp"

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>

#include <sys/syscall.h>
#include <unistd.h>

namespace keel::doctor {

namespace {

struct Note {
    std::uint64_t token;
    std::string what;
    Site target;
    Site inside;
    std::int64_t since_ns;
};

struct ThreadRecord {
    std::mutex mu;
    std::uint64_t tid = 0;
    // keel's own wait (at most one at a time per thread)
    const char* where = nullptr;
    Site target = 0;
    std::int64_t since_ns = 0;
    std::uint64_t wait_id = 0;
    std::vector<Note> notes;
};

std::atomic<std::uint64_t> g_next_id{1};

struct ThreadList {
    std::mutex mu;
    std::vector<std::shared_ptr<ThreadRecord>> threads;
};

ThreadList& thread_list() {
    static ThreadList* list = new ThreadList();  // never destroyed: threads end during exit
    return *list;
}

// Registers the thread's record on first use; unregisters it when the
// thread ends.
struct ThreadHolder {
    std::shared_ptr<ThreadRecord> record;
    ThreadHolder() : record(std::make_shared<ThreadRecord>()) {
        record->tid = static_cast<std::uint64_t>(::syscall(SYS_gettid));
        ThreadList& list = thread_list();
        std::lock_guard lock(list.mu);
        list.threads.push_back(record);
    }
    ~ThreadHolder() {
        ThreadList& list = thread_list();
        std::lock_guard lock(list.mu);
        std::erase(list.threads, record);
    }
    ThreadHolder(const ThreadHolder&) = delete;
    ThreadHolder& operator=(const ThreadHolder&) = delete;
    ThreadHolder(ThreadHolder&&) = delete;
    ThreadHolder& operator=(ThreadHolder&&) = delete;
};

ThreadRecord* this_thread_record() noexcept {
    try {
        thread_local ThreadHolder holder;
        return holder.record.get();
    } catch (...) {
        return nullptr;  // out of memory: this wait goes undiagnosed
    }
}

thread_local Site t_current_host_func = 0;

}  // namespace

void set_current_host_func(Site site) noexcept { t_current_host_func = site; }
Site current_host_func() noexcept { return t_current_host_func; }

HostWait::HostWait(const char* where, Site target) noexcept {
    if (!watchdog_wanted()) return;
    ThreadRecord* r = this_thread_record();
    if (r == nullptr) return;
    {
        std::lock_guard lock(r->mu);
        if (r->where != nullptr) return;  // nested: the outer wait stands
        r->where = where;
        r->target = target;
        r->since_ns = now_ns();
        r->wait_id = g_next_id.fetch_add(1, std::memory_order_relaxed);
    }
    active_ = true;
    ensure_watchdog();
}

HostWait::~HostWait() {
    if (!active_) return;
    ThreadRecord* r = this_thread_record();
    if (r == nullptr) return;
    std::lock_guard lock(r->mu);
    r->where = nullptr;
}

std::uint64_t begin_note(std::string what, Site target) noexcept {
    ThreadRecord* r = this_thread_record();
    if (r == nullptr) return 0;
    const std::uint64_t token = g_next_id.fetch_add(1, std::memory_order_relaxed);
    try {
        std::lock_guard lock(r->mu);
        r->notes.push_back(Note{token, std::move(what), target, t_current_host_func, now_ns()});
    } catch (...) {
        return 0;
    }
    ensure_watchdog();
    return token;
}

void end_note(std::uint64_t token) noexcept {
    if (token == 0) return;
    ThreadRecord* r = this_thread_record();
    if (r == nullptr) return;
    std::lock_guard lock(r->mu);
    std::erase_if(r->notes, [&](const Note& n) { return n.token == token; });
}

std::vector<WaitView> host_waits() {
    std::vector<std::shared_ptr<ThreadRecord>> threads;
    {
        ThreadList& list = thread_list();
        std::lock_guard lock(list.mu);
        threads = list.threads;
    }
    std::vector<WaitView> out;
    for (const auto& r : threads) {
        std::lock_guard lock(r->mu);
        if (r->where != nullptr)
            out.push_back(WaitView{r->tid, false, r->where, r->target, 0, r->since_ns, r->wait_id});
        for (const Note& n : r->notes)
            out.push_back(WaitView{r->tid, true, n.what, n.target, n.inside, n.since_ns, n.token});
    }
    std::sort(out.begin(), out.end(), [](const WaitView& a, const WaitView& b) { return a.since_ns < b.since_ns; });
    return out;
}

}  // namespace keel::doctor
