#include "bounded_call.hpp"

#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

namespace keel::comm {

bool run_bounded(std::function<void()> call, std::chrono::milliseconds bound) noexcept {
    struct Done {
        std::mutex mutex;
        std::condition_variable cv;
        bool done = false;
    };
    try {
        auto state = std::make_shared<Done>();
        std::thread worker([state, call = std::move(call)] {
            call();
            std::lock_guard lock(state->mutex);
            state->done = true;
            state->cv.notify_all();
        });
        bool finished = false;
        {
            std::unique_lock lock(state->mutex);
            finished = state->cv.wait_for(lock, bound, [&] { return state->done; });
        }
        if (finished) worker.join();
        else worker.detach();
        return finished;
    } catch (...) {
        return false;  // no thread or no memory: nothing ran
    }
}

}  // namespace keel::comm
