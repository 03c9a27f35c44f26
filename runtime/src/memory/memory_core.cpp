#include "memory/memory_core.hpp"

#include "host_func_guard.hpp"
#include "logging.hpp"

#include <keel/base/no_destructor.hpp>

#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <system_error>
#include <thread>

namespace keel::memory {
namespace {

// Cores destroyed on threads of their own. The process must not finish
// exiting while one is still being destroyed: its plugin's globals would be
// destroyed under it. So the first such destruction registers an exit
// handler that waits for every one still running; registered after the
// plugin was loaded, it runs before the plugin's own exit-time destructors.
class LateDestructions {
public:
    void start() {
        std::lock_guard lock(mu_);
        if (!waits_at_exit_) waits_at_exit_ = std::atexit([] { instance().wait_all(); }) == 0;
        ++running_;
    }
    void finish() {
        std::lock_guard lock(mu_);
        --running_;
        idle_.notify_all();  // under the lock: the waiter may return and exit at once
    }
    static LateDestructions& instance() {
        static base::NoDestructor<LateDestructions> late;  // exit-time releases start them too
        return *late;
    }

private:
    void wait_all() {
        std::unique_lock lock(mu_);
        idle_.wait(lock, [this] { return running_ == 0; });
    }
    std::mutex mu_;
    std::condition_variable idle_;
    int running_ = 0;
    bool waits_at_exit_ = false;
};

}  // namespace

MemoryCore::MemoryCore(std::unique_ptr<DeviceOps> owned, DeviceOps& ops, const MemoryConfig& config,
                       const detail::DeviceSlot* device)
    : owned_ops_(std::move(owned)),
      ops_(ops),
      config_(config),
      device_(device),
      events_(ops_),
      tracker_(ops_, events_, config.limits.max_queued_per_stream, config.reclaim_interval),
      allocator_(ops_, events_, tracker_, config.allocator, config.limits),
      staging_(ops_, tracker_, config.staging, config.limits) {}

// The handles of a core share one of these: its end tells the core's pools
// to let go of the core once their blocks are back.
struct MemoryCore::Handles {
    explicit Handles(std::shared_ptr<MemoryCore> c) noexcept : core(std::move(c)) {}
    Handles(const Handles&) = delete;
    Handles& operator=(const Handles&) = delete;
    Handles(Handles&&) = delete;
    Handles& operator=(Handles&&) = delete;
    ~Handles() { core->handles_gone(); }
    std::shared_ptr<MemoryCore> core;
};

std::shared_ptr<MemoryCore> MemoryCore::create(std::unique_ptr<DeviceOps> ops, const MemoryConfig& config,
                                               const detail::DeviceSlot* device) {
    DeviceOps& raw = *ops;
    return adopt(new MemoryCore(std::move(ops), raw, config, device));
}

std::shared_ptr<MemoryCore> MemoryCore::create(DeviceOps& ops, const MemoryConfig& config) {
    return adopt(new MemoryCore(nullptr, ops, config, nullptr));
}

std::shared_ptr<MemoryCore> MemoryCore::adopt(MemoryCore* raw) {
    std::shared_ptr<MemoryCore> core(raw, &release);  // released at once if this throws
    core->self_ = core;
    core->allocator_.set_owner(core);
    return share(core);
}

std::shared_ptr<MemoryCore> MemoryCore::share(const std::shared_ptr<MemoryCore>& core) {
    std::lock_guard lock(core->handles_mu_);
    std::shared_ptr<Handles> group = core->handles_.lock();
    if (!group) {
        group = std::make_shared<Handles>(core);
        core->allocator_.adopt(core);
        core->handles_ = group;
    }
    return std::shared_ptr<MemoryCore>(std::move(group), core.get());  // shares the group's count
}

void MemoryCore::handles_gone() noexcept {
    std::lock_guard lock(handles_mu_);
    // A group started since (share() from the registry) keeps the pools'
    // references; this one's end then changes nothing.
    if (handles_.expired()) allocator_.orphan();
}

MemoryCore::~MemoryCore() {
    // Deferred releases refer to the allocator and the staging pool: run
    // them all while both still exist. Members then go in reverse order.
    tracker_.shutdown();
}

void MemoryCore::release(MemoryCore* core) noexcept {
    if (!CompletionTracker::in_release() && !detail::in_host_func()) {
        delete core;
        return;
    }
    LateDestructions& late = LateDestructions::instance();
    late.start();
    try {
        // The thread's shutdown waits for the release still running here.
        std::thread([core, &late] {
            delete core;
            late.finish();
        }).detach();
    } catch (const std::system_error& e) {
        late.finish();
        detail::log_error(std::string("[MemoryCore] the last reference went inside a deferred release "
                                      "and no thread can destroy it: its memory is leaked (") +
                          e.what() + ")");
    }
}

}  // namespace keel::memory
