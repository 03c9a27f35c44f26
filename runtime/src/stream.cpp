#include <keel/stream.hpp>

#include <keel/event.hpp>
#include <keel/kernel.hpp>
#include <keel/memory/device_memory.hpp>

#include "host_func_guard.hpp"
#include "logging.hpp"
#include "plugin.hpp"

#include <mutex>
#include <optional>
#include <utility>

namespace keel {

namespace {
Error out_of_range(const char* where, const char* what, std::uint64_t size, const char* into,
                   std::uint64_t capacity) {
    return Error(KEEL_STATUS_OUT_OF_RANGE, std::string("[") + where + "] " + what + " of " +
                                               std::to_string(size) + " bytes does not fit " +
                                               into + " of " + std::to_string(capacity) + " bytes");
}
}  // namespace

Result<Stream> Stream::create(const Device& device) {
    keel_stream handle = nullptr;
    KEEL_TRY(device.slot().api().stream_create(device.native(), 0, &handle));
    return Stream(device, handle);
}

struct Stream::HoldState {
    std::mutex mu;
    std::optional<DeviceMemory> memory;  // guarded by mu
};

Stream::Stream(Device device, keel_stream handle)
    : device_(std::move(device)), handle_(handle), holds_(std::make_unique<HoldState>()) {}

Stream::Stream(Stream&& other) noexcept
    : device_(other.device_),
      handle_(std::exchange(other.handle_, nullptr)),
      holds_(std::move(other.holds_)) {}

Stream& Stream::operator=(Stream&& other) noexcept {
    if (this != &other) {
        if (auto r = close(); !r) detail::logger()->warn("[Stream::operator=] {}", r.error().message());
        device_ = other.device_;
        handle_ = std::exchange(other.handle_, nullptr);
        holds_ = std::move(other.holds_);
    }
    return *this;
}

Stream::~Stream() {
    if (auto r = close(); !r) detail::logger()->warn("[Stream::~Stream] {}", r.error().message());
}

Result<void> Stream::close() {
    if (handle_ == nullptr) return ok();
    return device_.slot().api().stream_destroy(std::exchange(handle_, nullptr));
}

Result<void> Stream::check(const char* where) const {
    if (handle_ == nullptr)
        return Error(KEEL_STATUS_INVALID_ARGUMENT,
                     std::string("[") + where + "] the stream is empty (moved-from or closed)");
    return ok();
}

Result<void> Stream::check_view(const char* where, const char* role, const DeviceView& view) const {
    if (view.empty())
        return Error(KEEL_STATUS_INVALID_ARGUMENT,
                     std::string("[") + where + "] " + role +
                         " is an empty view (a moved-from, freed or empty buffer)");
    if (view.slot() != &device_.slot())
        return Error(KEEL_STATUS_INVALID_ARGUMENT, std::string("[") + where + "] " + role +
                                                       " is memory of " + view.slot()->name +
                                                       ", but the stream is on " + device_.name());
    return ok();
}

Result<void> Stream::synchronize() const {
    KEEL_TRY(check("Stream::synchronize"));
    return device_.slot().api().stream_synchronize(handle_);
}

Result<bool> Stream::query() const {
    KEEL_TRY(check("Stream::query"));
    std::int32_t done = 0;
    KEEL_TRY(device_.slot().api().stream_query(handle_, &done));
    return done != 0;
}

Result<void> Stream::wait(const Event& event) const {
    KEEL_TRY(check("Stream::wait"));
    if (event.empty())
        return Error(KEEL_STATUS_INVALID_ARGUMENT,
                     "[Stream::wait] the event is empty (moved-from)");
    if (event.device() != device_)
        return Error(KEEL_STATUS_UNIMPLEMENTED,
                     "[Stream::wait] the event is of " + event.device().name() +
                         " and the stream of " + device_.name() +
                         "; waits across devices are not part of ABI 1.0");
    return device_.slot().api().stream_wait_event(handle_, event.native());
}

Result<void> Stream::enqueue_host_func(HostFunc fn) const {
    KEEL_TRY(check("Stream::enqueue_host_func"));
    std::unique_ptr<detail::HostFuncBase> callable = std::move(fn).take();
    if (!callable)
        return Error(KEEL_STATUS_INVALID_ARGUMENT,
                     "[Stream::enqueue_host_func] the host function is empty (moved-from)");
    KEEL_TRY(device_.slot().api().stream_enqueue_host_func(handle_, &detail::host_func_trampoline,
                                                           callable.get()));
    // Enqueued: the trampoline owns it now. On error it is destroyed here.
    (void)callable.release();
    return ok();
}

Result<void> Stream::copy_h2d(DeviceView dst, const void* src, std::uint64_t size) const {
    constexpr const char* where = "Stream::copy_h2d";
    KEEL_TRY(check(where));
    KEEL_TRY(check_view(where, "the destination", dst));
    if (size == 0) return ok();
    if (src == nullptr)
        return Error(KEEL_STATUS_INVALID_ARGUMENT, "[Stream::copy_h2d] the source pointer is null");
    if (size > dst.size()) return out_of_range(where, "a copy", size, "the destination", dst.size());
    return device_.slot().api().memcpy_h2d(handle_, dst.address(), src, size);
}

Result<void> Stream::copy_h2d(DeviceView dst, const PinnedBuffer& src) const {
    if (src.empty())
        return Error(KEEL_STATUS_INVALID_ARGUMENT,
                     "[Stream::copy_h2d] the source pinned buffer is empty (moved-from)");
    return copy_h2d(dst, src.data(), src.size());
}

Result<void> Stream::copy_h2d_inline(DeviceView dst, const void* src, std::uint64_t size) const {
    constexpr const char* where = "Stream::copy_h2d_inline";
    KEEL_TRY(check(where));
    KEEL_TRY(check_view(where, "the destination", dst));
    if (size == 0) return ok();
    if (src == nullptr)
        return Error(KEEL_STATUS_INVALID_ARGUMENT,
                     "[Stream::copy_h2d_inline] the source pointer is null");
    if (size > KEEL_INLINE_COPY_MAX)
        return Error(KEEL_STATUS_INVALID_ARGUMENT,
                     "[Stream::copy_h2d_inline] " + std::to_string(size) +
                         " bytes is more than an inline copy takes (" +
                         std::to_string(KEEL_INLINE_COPY_MAX) + "); use copy_h2d");
    if (size > dst.size()) return out_of_range(where, "a copy", size, "the destination", dst.size());
    return device_.slot().api().memcpy_h2d_inline(handle_, dst.address(), src, size);
}

Result<void> Stream::copy_d2h(void* dst, DeviceView src, std::uint64_t size) const {
    constexpr const char* where = "Stream::copy_d2h";
    KEEL_TRY(check(where));
    KEEL_TRY(check_view(where, "the source", src));
    if (size == 0) return ok();
    if (dst == nullptr)
        return Error(KEEL_STATUS_INVALID_ARGUMENT,
                     "[Stream::copy_d2h] the destination pointer is null");
    if (size > src.size()) return out_of_range(where, "a copy", size, "the source", src.size());
    return device_.slot().api().memcpy_d2h(handle_, dst, src.address(), size);
}

Result<void> Stream::copy_d2h(PinnedBuffer& dst, DeviceView src) const {
    constexpr const char* where = "Stream::copy_d2h";
    if (dst.empty())
        return Error(KEEL_STATUS_INVALID_ARGUMENT,
                     "[Stream::copy_d2h] the destination pinned buffer is empty (moved-from)");
    if (src.size() > dst.size())
        return out_of_range(where, "the source", src.size(), "the destination pinned buffer",
                            dst.size());
    return copy_d2h(dst.data(), src, src.size());
}

Result<void> Stream::copy_d2d(DeviceView dst, DeviceView src) const {
    constexpr const char* where = "Stream::copy_d2d";
    KEEL_TRY(check(where));
    KEEL_TRY(check_view(where, "the destination", dst));
    KEEL_TRY(check_view(where, "the source", src));
    if (src.size() == 0) return ok();
    if (src.size() > dst.size())
        return out_of_range(where, "the source", src.size(), "the destination", dst.size());
    const bool overlap = dst.address() < src.address() + src.size() &&
                         src.address() < dst.address() + src.size();
    if (overlap)
        return Error(KEEL_STATUS_INVALID_ARGUMENT,
                     "[Stream::copy_d2d] source and destination ranges overlap");
    return device_.slot().api().memcpy_d2d(handle_, dst.address(), src.address(), src.size());
}

Result<void> Stream::memset(DeviceView dst, std::uint8_t value) const {
    constexpr const char* where = "Stream::memset";
    KEEL_TRY(check(where));
    KEEL_TRY(check_view(where, "the destination", dst));
    if (dst.size() == 0) return ok();
    return device_.slot().api().memset_d8(handle_, dst.address(), value, dst.size());
}

Result<void> Stream::launch(const Kernel& kernel, const KernelArgs& args) const {
    KEEL_TRY(check("Stream::launch"));
    // Messages are built only on error: this is a hot path.
    auto invalid = [&](const std::string& what) {
        return Error(KEEL_STATUS_INVALID_ARGUMENT, "[Stream::launch " + kernel.name() + "] " + what);
    };
    if (kernel.native() == nullptr) return invalid("the kernel is empty");
    if (kernel.device() != device_)
        return invalid("the kernel is of " + kernel.device().name() + ", but the stream is on " +
                       device_.name());
    for (std::size_t i = 0; i < args.size(); ++i) {
        const detail::DeviceSlot* slot = args.device_of(i);
        if (slot != nullptr && slot != &device_.slot())
            return invalid("argument " + std::to_string(i) + " is memory of " + slot->name +
                           ", but the stream is on " + device_.name());
        if (args.is_empty_view(i))
            return invalid("argument " + std::to_string(i) +
                           " is an empty view (a moved-from, freed or empty buffer); use "
                           "KernelArgs::absent() for an absent optional buffer");
    }
    std::vector<keel_kernel_arg> encoded = args.encode();
    keel_launch_args launch{};
    launch.struct_size = KEEL_LAUNCH_ARGS_STRUCT_SIZE;
    launch.args = encoded.data();
    launch.arg_count = encoded.size();
    launch.arg_struct_size = sizeof(keel_kernel_arg);
    return device_.slot().api().kernel_launch(handle_, kernel.native(), &launch);
}

Result<void> Stream::hold_task(memory::DeferredTask release) const {
    if (auto r = check("Stream::hold"); !r) {
        release.run();  // no stream, so no work that could still use them
        return r;
    }
    DeviceMemory* shared = nullptr;
    {
        std::lock_guard lock(holds_->mu);
        if (!holds_->memory) {
            auto created = DeviceMemory::for_device(device_);
            if (!created) {
                (void)synchronize();
                release.run();
                return std::move(created).error().context("Stream::hold");
            }
            holds_->memory = std::move(*created);
        }
        shared = &*holds_->memory;  // set once, lives as long as the stream
    }
    return memory::hold_task(shared->core(), handle_, std::move(release));
}

}  // namespace keel
