// The keys one rank wrote into a store for a communicator, erased when they
// are no longer needed, so that a store serves job after job.
#pragma once

#include <keel/comm.hpp>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace keel::comm {

// A store that records every key set through store(); the recorded keys
// are erased when this goes (unless keep()), best effort: a store that
// cannot erase keeps them, which costs space, never correctness.
// Move-only; store() may be used from any thread while this lives.
class WrittenKeys {
public:
    explicit WrittenKeys(const Store& store);
    WrittenKeys(WrittenKeys&&) noexcept = default;
    WrittenKeys& operator=(WrittenKeys&&) = delete;
    WrittenKeys(const WrittenKeys&) = delete;
    WrittenKeys& operator=(const WrittenKeys&) = delete;
    ~WrittenKeys();

    // The store to write through: set() records the key.
    [[nodiscard]] const Store& store() const noexcept { return recording_; }
    // Erases nothing when this goes.
    void keep() noexcept { kept_ = true; }
    // Leaves `key` to the caller, who erases it later.
    void hold(const std::string& key);
    // How many keys are recorded now.
    [[nodiscard]] std::size_t count() const;

private:
    struct Keys {
        mutable std::mutex mutex;
        std::vector<std::string> names;
    };
    Store target_;
    std::shared_ptr<Keys> keys_;
    Store recording_;
    bool kept_ = false;
};

}  // namespace keel::comm
