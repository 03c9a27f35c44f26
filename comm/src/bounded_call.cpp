#include "bounded_call.hpp"

#include <keel/base/no_destructor.hpp>

#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <dlfcn.h>
#include <memory>
#include <mutex>
#include <thread>

namespace keel::comm {
namespace {

// How long exit waits for calls still running (a store's, the plugin's)
// before it ends the process itself: several times any call's bound.
constexpr std::chrono::seconds kExitWait{2};
// Exit hooks registered at most (one more at each call left running).
constexpr int kMaxHooks = 16;

// Every call's thread that has not ended yet, and whether the process has
// begun to exit. Never destroyed: a thread looks at it at any point of exit.
struct Workers {
    std::mutex mutex;
    std::condition_variable cv;
    int running = 0;       // threads between their start and their last touch of anything
    bool exiting = false;  // the exit hook ran: no call starts any more
    int hooks = 0;
};

Workers& workers() {
    static base::NoDestructor<Workers> w;
    return *w;
}

// Exit (return from main, exit()): the calls still running finish, captures
// destroyed, before exit destroys any static made before the hook was
// registered; one still running after kExitWait ends the process here with
// its status (stdio flushed): the destructors after this point could run
// under it.
void wait_at_exit(int status, void*) {
    Workers& w = workers();
    std::unique_lock lock(w.mutex);
    w.exiting = true;
    if (w.cv.wait_for(lock, kExitWait, [&] { return w.running == 0; })) return;
    lock.unlock();
    std::fflush(nullptr);
    std::_Exit(status);
}

// Registers wait_at_exit again (under the lock), so that it runs before the
// destructors of every static made so far: exit runs hooks and destructors
// in the reverse order of their registration. The first time, this library
// is pinned (never unloaded): a thread left running its code must never see
// it go, nor may the hook dangle after a dlclose. (Where the pin fails,
// this code is most likely part of the program itself.)
void hook_exit(Workers& w) {
    if (w.hooks >= kMaxHooks) return;
    if (w.hooks == 0) {
        Dl_info self{};
        if (::dladdr(reinterpret_cast<void*>(&wait_at_exit), &self) != 0 && self.dli_fname != nullptr)
            (void)::dlopen(self.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
    }
    if (::on_exit(&wait_at_exit, nullptr) == 0) ++w.hooks;
}

}  // namespace

bool run_bounded(std::function<void()> call, std::chrono::milliseconds bound) noexcept {
    struct Done {
        std::mutex mutex;
        std::condition_variable cv;
        bool done = false;
    };
    Workers& w = workers();
    try {
        {
            std::lock_guard lock(w.mutex);
            if (w.exiting) return false;  // nothing starts once exit began
            if (w.hooks == 0) hook_exit(w);
            ++w.running;
        }
        auto state = std::make_shared<Done>();
        auto owned = std::make_unique<std::function<void()>>(std::move(call));
        std::thread worker;
        try {
            worker = std::thread([state, owned = std::move(owned), &w]() mutable {
                (*owned)();
                {
                    std::lock_guard lock(state->mutex);
                    state->done = true;
                    state->cv.notify_all();
                }
                // Its captures (a store, a device) go while it still counts
                // as running: an exit that began meanwhile waits for this.
                owned.reset();
                std::lock_guard lock(w.mutex);
                --w.running;
                w.cv.notify_all();
            });
        } catch (...) {
            std::lock_guard lock(w.mutex);
            --w.running;
            w.cv.notify_all();
            throw;
        }
        bool finished = false;
        {
            std::unique_lock lock(state->mutex);
            finished = state->cv.wait_for(lock, bound, [&] { return state->done; });
        }
        if (finished) {
            worker.join();
        } else {
            worker.detach();
            // Hooked again: its hook runs before the statics made until now.
            std::lock_guard lock(w.mutex);
            hook_exit(w);
        }
        return finished;
    } catch (...) {
        return false;  // no thread or no memory: nothing ran
    }
}

}  // namespace keel::comm
