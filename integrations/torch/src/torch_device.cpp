// The allocator (keel's stream-ordered cache on the current stream) and the
// device guard (keel's devices, streams and events) of privateuseone.
#include "torch_device.hpp"

#include "errors.hpp"

#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <torch/version.h>

#include <atomic>
#include <mutex>
#include <utility>

namespace keel_torch {

const TorchDevice& torch_device(c10::DeviceIndex index) {
    const Devices* devices = unwrap(Devices::get());
    return *unwrap(devices->at(index < 0 ? current_device_index() : index));
}

const keel::Stream& keel_stream(const c10::Stream& stream) {
    TORCH_CHECK(stream.device_type() == c10::DeviceType::PrivateUse1, "[keel_torch] not a keel stream: ",
                stream);
    return *unwrap(torch_device(stream.device_index()).stream(stream.id()));
}

const keel::Stream& current_keel_stream(c10::DeviceIndex index) {
    return *unwrap(torch_device(index).current_stream());
}

c10::Stream current_c10_stream(c10::DeviceIndex index) {
    const c10::DeviceIndex resolved = index < 0 ? static_cast<c10::DeviceIndex>(current_device_index()) : index;
    return c10::Stream(c10::Stream::UNSAFE, c10::Device(c10::DeviceType::PrivateUse1, resolved),
                       current_stream_id(resolved));
}

namespace {

// The context of a device DataPtr: the buffer it frees (stream-ordered)
// when PyTorch drops the storage. Send (PyTorch may drop it on any thread)
// and Sync (record_stream takes the lock).
struct DeviceAllocation {
    keel::Buffer buffer;
    std::mutex mutex;  // record_stream needs exclusive access to the buffer
    // The device's data generation its bytes belong to (TorchDevice::recover).
    std::atomic<std::uint64_t> generation{0};
    c10::DeviceIndex device = 0;
};

void delete_device_allocation(void* context) { delete static_cast<DeviceAllocation*>(context); }

struct PinnedAllocation {
    std::shared_ptr<keel::PinnedBuffer> buffer;  // shared: held by copies in flight
};

void delete_pinned_allocation(void* context) { delete static_cast<PinnedAllocation*>(context); }

void delete_nothing(void*) {}

// The keel allocation behind a DataPtr of device_allocator(), else null.
DeviceAllocation* allocation_of(const c10::DataPtr& data) {
    if (data.get_deleter() != &delete_device_allocation) return nullptr;
    return static_cast<DeviceAllocation*>(data.get_context());
}

class DeviceAllocator final : public c10::Allocator {
public:
    c10::DataPtr allocate(std::size_t bytes) const override {
        return allocate_device(static_cast<c10::DeviceIndex>(current_device_index()), bytes);
    }
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 3)
    // Required from PyTorch 2.3 on: a device-to-device copy on the current stream.
    void copy_data(void* dest, const void* src, std::size_t count) const override {
        if (count == 0) return;
        const TorchDevice& device = torch_device(-1);
        const auto view = [&](const void* p) {
            return keel::DeviceView(device.device(), reinterpret_cast<std::uintptr_t>(p), count);
        };
        unwrap(unwrap(device.current_stream())->copy(view(dest), view(src)));
    }
#endif
};

DeviceAllocator allocator;

}  // namespace

c10::DataPtr allocate_device(c10::DeviceIndex index, std::size_t bytes) {
    const TorchDevice& device = torch_device(index);
    const c10::Device where(c10::DeviceType::PrivateUse1, static_cast<c10::DeviceIndex>(device.index()));
    if (bytes == 0) return {nullptr, nullptr, &delete_nothing, where};
    const DeviceUse use(device);  // the generation and the stream of one side of a recover()
    const keel::Stream& stream = *unwrap(device.current_stream());
    auto allocation = std::make_unique<DeviceAllocation>();
    allocation->generation.store(device.data_generation(), std::memory_order_relaxed);
    allocation->device = static_cast<c10::DeviceIndex>(device.index());
    allocation->buffer = unwrap(keel::Buffer::allocate(stream, bytes));
    // The device address stands for the data pointer: it is never
    // dereferenced on the host (keel devices need not be host-addressable).
    void* address = reinterpret_cast<void*>(static_cast<std::uintptr_t>(allocation->buffer.address()));
    // The DataPtr owns the context from here; its deleter frees it.
    return {address, allocation.release(), &delete_device_allocation, where};
}

c10::Allocator* device_allocator() { return &allocator; }

c10::DataPtr allocate_pinned(c10::DeviceIndex index, std::size_t bytes) {
    const TorchDevice& device = torch_device(index);
    if (bytes == 0) return {nullptr, nullptr, &delete_nothing, c10::Device(c10::DeviceType::CPU)};
    auto allocation = std::make_unique<PinnedAllocation>();
    allocation->buffer =
        std::make_shared<keel::PinnedBuffer>(unwrap(keel::PinnedBuffer::allocate(device.device(), bytes)));
    void* data = allocation->buffer->data();
    return {data, allocation.release(), &delete_pinned_allocation, c10::Device(c10::DeviceType::CPU)};
}

std::shared_ptr<keel::PinnedBuffer> pinned_buffer_of(const c10::DataPtr& data) {
    if (data.get_deleter() != &delete_pinned_allocation) return nullptr;
    return static_cast<PinnedAllocation*>(data.get_context())->buffer;
}

void record_data_on_stream(const c10::DataPtr& data, const c10::Stream& stream) {
    DeviceAllocation* allocation = allocation_of(data);
    if (allocation == nullptr) return;
    const keel::Stream& target = keel_stream(stream);
    std::lock_guard lock(allocation->mutex);
    unwrap(allocation->buffer.record_stream(target));
}

bool data_known(const c10::Storage& storage) {
    const DeviceAllocation* allocation = allocation_of(storage.data_ptr());
    if (allocation == nullptr) return true;  // no bytes, or not keel memory
    return allocation->generation.load(std::memory_order_acquire) ==
           torch_device(allocation->device).data_generation();
}

void check_data_known(const c10::Storage& storage) {
    if (data_known(storage)) return;
    const DeviceAllocation* allocation = allocation_of(storage.data_ptr());
    TORCH_CHECK(false, "[keel_torch] this tensor's data is unknown: it was on privateuseone:",
                static_cast<int>(allocation->device), " (", torch_device(allocation->device).device().name(),
                ") when keel_torch.recover() cleared a failed stream, and work that failed or was skipped may have "
                "been meant to write it. Write it whole first (copy_, fill_, zero_, load_state_dict) or use a new "
                "tensor.");
}

WholeWrite::WholeWrite(const c10::Storage& storage) {
    DeviceAllocation* allocation = allocation_of(storage.data_ptr());
    if (allocation == nullptr) return;
    allocation_ = allocation;
    before_ = allocation->generation.exchange(torch_device(allocation->device).data_generation(),
                                              std::memory_order_acq_rel);
}

WholeWrite::~WholeWrite() {
    if (allocation_ != nullptr && !committed_)
        static_cast<DeviceAllocation*>(allocation_)->generation.store(before_, std::memory_order_release);
}

void inherit_data_state(const c10::DataPtr& fresh, const c10::DataPtr& old) {
    DeviceAllocation* to = allocation_of(fresh);
    const DeviceAllocation* from = allocation_of(old);
    if (to == nullptr || from == nullptr) return;
    to->generation.store(from->generation.load(std::memory_order_acquire), std::memory_order_release);
}

namespace {

// A c10 event: a keel event made at its first record.
struct GuardEvent {
    keel::Event event;
};

class KeelGuardImpl final : public c10::impl::DeviceGuardImplInterface {
public:
    c10::DeviceType type() const override { return c10::DeviceType::PrivateUse1; }

    c10::Device exchangeDevice(c10::Device device) const override {
        const c10::Device previous = getDevice();
        setDevice(device);
        return previous;
    }
    c10::Device getDevice() const override {
        return {c10::DeviceType::PrivateUse1, static_cast<c10::DeviceIndex>(current_device_index())};
    }
    void setDevice(c10::Device device) const override {
        TORCH_CHECK(device.type() == c10::DeviceType::PrivateUse1, "[keel_torch] not a keel device: ", device);
        TORCH_CHECK(device.index() >= 0 && device.index() < Devices::configured_count(),
                    "[keel_torch] privateuseone:", static_cast<int>(device.index()),
                    " does not exist: KEEL_TORCH_DEVICES names ", Devices::configured_count(), " device(s)");
        set_current_device_index(device.index());
    }
    void uncheckedSetDevice(c10::Device device) const noexcept override {
        if (device.index() >= 0) set_current_device_index(device.index());
    }

    c10::Stream getStream(c10::Device device) const noexcept override {
        return current_c10_stream(device.index());
    }
    c10::Stream getDefaultStream(c10::Device device) const override {
        return c10::Stream(c10::Stream::UNSAFE, device, 0);
    }
    c10::Stream exchangeStream(c10::Stream stream) const noexcept override {
        const c10::Stream previous = current_c10_stream(stream.device_index());
        set_current_stream_id(previous.device_index(), stream.id());
        return previous;
    }
    // Future.then's callbacks run on a stream from here (c10's ivalue::Future).
    c10::Stream getStreamFromGlobalPool(c10::Device device, bool) const override {
        const TorchDevice& d = torch_device(device.index());
        return c10::Stream(c10::Stream::UNSAFE, c10::Device(c10::DeviceType::PrivateUse1, static_cast<c10::DeviceIndex>(d.index())),
                           unwrap(d.pooled_stream()));
    }
    c10::DeviceIndex deviceCount() const noexcept override {
        return static_cast<c10::DeviceIndex>(Devices::configured_count());
    }

    void record(void** event, const c10::Stream& stream, const c10::DeviceIndex device_index,
                const c10::EventFlag) const override {
        const keel::Stream& target = keel_stream(stream);
        if (*event == nullptr) {
            const TorchDevice& device = torch_device(device_index >= 0 ? device_index : stream.device_index());
            auto created = std::make_unique<GuardEvent>(GuardEvent{unwrap(keel::Event::create(device.device()))});
            *event = created.release();  // c10 owns it from here; destroyEvent frees it
        }
        unwrap(static_cast<GuardEvent*>(*event)->event.record(target));
    }
    void block(void* event, const c10::Stream& stream) const override {
        if (event == nullptr) return;  // never recorded: nothing to wait for
        unwrap(keel_stream(stream).wait(static_cast<GuardEvent*>(event)->event));
    }
    bool queryEvent(void* event) const override {
        if (event == nullptr) return true;
        return unwrap(static_cast<GuardEvent*>(event)->event.query());
    }
    void destroyEvent(void* event, const c10::DeviceIndex) const noexcept override {
        delete static_cast<GuardEvent*>(event);
    }

    bool queryStream(const c10::Stream& stream) const override { return unwrap(keel_stream(stream).query()); }
    void synchronizeStream(const c10::Stream& stream) const override {
        unwrap(keel_stream(stream).synchronize());
    }

    void recordDataPtrOnStream(const c10::DataPtr& data, const c10::Stream& stream) const override {
        record_data_on_stream(data, stream);
    }
};

}  // namespace

C10_REGISTER_GUARD_IMPL(PrivateUse1, KeelGuardImpl);

// The allocator of every privateuseone storage PyTorch makes itself.
REGISTER_ALLOCATOR(c10::DeviceType::PrivateUse1, &allocator);

}  // namespace keel_torch
