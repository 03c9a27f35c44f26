#include "devices.hpp"

#include <keel/environment.hpp>

#include <condition_variable>
#include <optional>
#include <string>
#include <sstream>
#include <string_view>
#include <unordered_map>

namespace keel_torch {

std::vector<std::string> configured_device_names() {
    std::vector<std::string> names;
    const std::optional<std::string_view> env = keel::env::text(keel::env::Var::torch_devices);
    std::stringstream list(env ? std::string(*env) : std::string());
    for (std::string name; std::getline(list, name, ',');) {
        const auto first = name.find_first_not_of(" \t");
        const auto last = name.find_last_not_of(" \t");
        if (first != std::string::npos) names.push_back(name.substr(first, last - first + 1));
    }
    if (names.empty()) names.emplace_back("cpu:0");
    return names;
}

namespace {

// The calling thread's current stream id per device index; absent = 0.
thread_local std::unordered_map<int, std::int64_t> current_streams;
thread_local int this_threads_device = 0;

}  // namespace

std::int64_t current_stream_id(int index) noexcept {
    const auto found = current_streams.find(index);
    return found == current_streams.end() ? 0 : found->second;
}

void set_current_stream_id(int index, std::int64_t id) noexcept {
    try {
        current_streams[index] = id;
    } catch (...) {  // no memory for the map entry: the stream stays what it was
    }
}

int current_device_index() noexcept { return this_threads_device; }
void set_current_device_index(int index) noexcept { this_threads_device = index; }

keel::Result<const keel::Stream*> TorchDevice::stream(std::int64_t id) const {
    std::lock_guard lock(mutex_);
    if (id == 0 && streams_.empty()) {
        KEEL_TRY_ASSIGN(keel::Stream created, keel::Stream::create(device_));
        streams_.push_back(std::make_unique<keel::Stream>(std::move(created)));
    }
    if (id < 0 || id >= static_cast<std::int64_t>(streams_.size()))
        return keel::Error(KEEL_STATUS_INVALID_ARGUMENT,
                           "[keel_torch] no stream " + std::to_string(id) + " on privateuseone:" +
                               std::to_string(index_) + " (" + device_.name() + ")");
    return streams_[static_cast<std::size_t>(id)].get();
}

keel::Result<std::int64_t> TorchDevice::pooled_stream() const {
    KEEL_TRY(stream(0));  // the default stream is id 0 whatever is asked for first
    std::lock_guard lock(mutex_);
    if (static_cast<std::int64_t>(pool_ids_.size()) < stream_pool_size) {
        KEEL_TRY_ASSIGN(std::int64_t id, add_stream_locked());
        pool_ids_.push_back(id);
        return id;
    }
    return pool_ids_[static_cast<std::size_t>(next_pooled_++ % stream_pool_size)];
}

keel::Result<std::int64_t> TorchDevice::dedicated_stream() const {
    KEEL_TRY(stream(0));
    std::lock_guard lock(mutex_);
    return add_stream_locked();
}

keel::Result<std::int64_t> TorchDevice::add_stream_locked() const {
    KEEL_TRY_ASSIGN(keel::Stream created, keel::Stream::create(device_));
    streams_.push_back(std::make_unique<keel::Stream>(std::move(created)));
    return static_cast<std::int64_t>(streams_.size()) - 1;
}

keel::Result<keel::Kernel> TorchDevice::kernel(const std::string& name) const {
    {
        std::lock_guard lock(mutex_);
        if (const auto found = kernels_.find(name); found != kernels_.end()) return found->second;
    }
    KEEL_TRY_ASSIGN(keel::Kernel kernel, keel::Kernel::find(device_, name));
    std::lock_guard lock(mutex_);
    kernels_.emplace(name, kernel);
    return kernel;
}

std::int64_t TorchDevice::stream_count() const {
    std::lock_guard lock(mutex_);
    return static_cast<std::int64_t>(streams_.size());
}

namespace {

// The calling thread's DeviceUse depth per device index.
thread_local std::unordered_map<int, int> device_uses;

// recover()s waiting for a device, by index: new DeviceUses wait behind
// them, so threads that keep the device busy cannot starve recover() (a
// shared_mutex may prefer its readers).
struct RecoverQueue {
    std::mutex mutex;
    std::condition_variable done;
    std::unordered_map<int, int> waiting;
};

RecoverQueue& recover_queue() {
    static RecoverQueue queue;
    return queue;
}

}  // namespace

DeviceUse::DeviceUse(const TorchDevice& device) : device_(device) {
    int& depth = device_uses[device.index()];
    if (depth == 0) {
        {
            RecoverQueue& q = recover_queue();
            std::unique_lock lock(q.mutex);
            q.done.wait(lock, [&] { return q.waiting[device.index()] == 0; });
        }
        device.use_mutex_.lock_shared();
    }
    ++depth;
}

DeviceUse::~DeviceUse() {
    int& depth = device_uses[device_.index()];
    if (--depth == 0) device_.use_mutex_.unlock_shared();
}

int DeviceUse::held(const TorchDevice& device) noexcept {
    const auto found = device_uses.find(device.index());
    return found == device_uses.end() ? 0 : found->second;
}

keel::Result<std::vector<keel::Error>> TorchDevice::recover() const {
    if (DeviceUse::held(*this) > 0)
        return keel::Error(KEEL_STATUS_FAILED_PRECONDITION,
                           "[keel_torch::recover] " + device_.name() +
                               ": called inside an operation on the device (it would wait for itself)");
    // No operation is between its checks and its enqueues while streams
    // are replaced: each sees the fault's streams and data, or the new ones.
    RecoverQueue& q = recover_queue();
    {
        std::lock_guard queued(q.mutex);
        ++q.waiting[index_];
    }
    std::unique_lock use(use_mutex_);
    {
        std::lock_guard queued(q.mutex);
        --q.waiting[index_];
    }
    q.done.notify_all();
    std::lock_guard lock(mutex_);
    std::vector<std::size_t> failed;
    std::vector<keel::Error> faults;
    for (std::size_t id = 0; id < streams_.size(); ++id) {
        keel::Result<void> synced = streams_[id]->synchronize();
        if (synced.ok()) continue;
        failed.push_back(id);
        faults.push_back(synced.error());
    }
    if (failed.empty()) return faults;
    // The new generation first: if a stream cannot be replaced below, the
    // data the failed work left is still never taken as written.
    generation_.fetch_add(1, std::memory_order_acq_rel);
    for (const std::size_t id : failed) {
        keel::Result<keel::Stream> fresh = keel::Stream::create(device_);
        if (!fresh.ok())
            return keel::Error(fresh.error().code(), "[keel_torch::recover] " + device_.name() +
                                                         ": no fresh stream for failed stream " + std::to_string(id) +
                                                         ": " + fresh.error().message());
        failed_streams_.push_back(std::move(streams_[id]));
        streams_[id] = std::make_unique<keel::Stream>(std::move(fresh).value());
    }
    return faults;
}

keel::Result<const keel::Stream*> TorchDevice::current_stream() const {
    return stream(current_stream_id(index_));
}

int Devices::configured_count() noexcept {
    static const int count = [] {
        try {
            return static_cast<int>(configured_device_names().size());
        } catch (...) {
            return 0;
        }
    }();
    return count;
}

keel::Result<std::unique_ptr<Devices>> Devices::make() {
    KEEL_TRY_ASSIGN(keel::Runtime runtime, keel::Runtime::create());
    std::unique_ptr<Devices> set(new Devices(std::move(runtime)));  // private constructor: no make_unique
    int index = 0;
    for (const std::string& name : configured_device_names()) {
        auto device = set->runtime_.device(name);
        if (!device.ok())
            return keel::Error(device.error().code(),
                               "[keel_torch] KEEL_TORCH_DEVICES names '" + name + "': " + device.error().message());
        set->devices_.push_back(std::make_unique<TorchDevice>(index++, std::move(device).value()));
    }
    return set;
}

keel::Result<const Devices*> Devices::get() {
    // Made once; a failure is kept and returned to every caller.
    static const keel::Result<std::unique_ptr<Devices>> devices = make();
    if (!devices.ok()) return devices.error();
    return devices.value().get();
}

keel::Result<const TorchDevice*> Devices::at(std::int64_t index) const {
    if (index < 0 || index >= count())
        return keel::Error(KEEL_STATUS_INVALID_ARGUMENT,
                           "[keel_torch] privateuseone:" + std::to_string(index) + " does not exist: KEEL_TORCH_DEVICES names " +
                               std::to_string(count()) + " device(s)");
    return devices_[static_cast<std::size_t>(index)].get();
}

}  // namespace keel_torch
