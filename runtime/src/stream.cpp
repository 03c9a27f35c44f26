#include <keel/stream.hpp>

#include <keel/memory_pool.hpp>
#include <keel/event.hpp>
#include <keel/kernel.hpp>

#include "access.hpp"
#include "diagnose/host_waits.hpp"
#include "diagnose/ledger.hpp"
#include "diagnose/tracked_host_func.hpp"
#include "host_func_guard.hpp"
#include "logging.hpp"
#include "ordering_marks.hpp"
#include "fallible_reach.hpp"
#include "pending_fallible.hpp"
#include "memory/fence.hpp"
#include "memory/hold.hpp"
#include "memory/pinned_uses.hpp"
#include "memory/stream_closed.hpp"
#include "memory/stream_registry.hpp"
#include "memory/shared_memory.hpp"
#include "memory/transfer.hpp"
#include "cross_device/bridge.hpp"
#include "cross_device/origins.hpp"
#include "plugin.hpp"
#include "trace/event_times.hpp"
#include "trace/hooks.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <mutex>
#include <span>
#include <vector>
#include <utility>

namespace keel {

namespace {

constexpr const char* kCopy = "Stream::copy";

Error out_of_range(const char* where, const char* what, std::uint64_t size, const char* into,
                   std::uint64_t capacity) {
    return Error(KEEL_STATUS_OUT_OF_RANGE, std::string("[") + where + "] " + what + " of " +
                                               std::to_string(size) + " bytes does not fit " +
                                               into + " of " + std::to_string(capacity) + " bytes");
}

}  // namespace

// The memory instance of a stream, bound once: at creation for
// Stream::create(memory), else on first need to the device's shared one.
struct Stream::Memory {
    std::mutex mu;
    std::atomic<bool> bound{false};
    std::shared_ptr<memory::MemoryCore> core;  // written once under mu, before `bound`
    memory::StreamGeneration generation = 0;   // from the stream registry, at creation
    std::atomic<std::uint32_t> trace_seen{0};  // the last trace session that named it
    // Event timing for traces: made once under times_mu, then read through
    // times_state (0: not yet, 1: none, 2: `times`).
    std::mutex times_mu;
    std::atomic<int> times_state{0};
    std::shared_ptr<trace::StreamTimes> times;
    // What the stream enqueued and how far it got, for the hang doctor.
    std::shared_ptr<doctor::StreamLedger> ledger;
    // Its fallible host functions not finished yet (settle_fallible_host_funcs):
    // the count fallible_reach.hpp keeps for its handle, set at creation.
    std::shared_ptr<detail::PendingFallible> pending_fallible;
};

doctor::StreamLedger* detail::Access::ledger(const Stream& stream) noexcept {
    return stream.memory_ ? stream.memory_->ledger.get() : nullptr;
}

namespace {

// The ledger of `stream` (valid: the stream was checked).
inline doctor::StreamLedger& ledger_of(const Stream& stream) noexcept {
    doctor::StreamLedger* ledger = detail::Access::ledger(stream);
    if (ledger == nullptr) __builtin_unreachable();  // every open stream has one (create)
    return *ledger;
}

}  // namespace

std::uint64_t detail::Access::generation(const Stream& stream) noexcept { return stream.memory_->generation; }

std::atomic<std::uint32_t>& detail::Access::trace_seen(const Stream& stream) noexcept {
    return stream.memory_->trace_seen;
}

trace::StreamTimes* detail::Access::stream_times(const Stream& stream) noexcept {
    Stream::Memory& m = *stream.memory_;
    int state = m.times_state.load(std::memory_order_acquire);
    if (state == 0) {
        std::lock_guard lock(m.times_mu);
        state = m.times_state.load(std::memory_order_relaxed);
        if (state == 0) {
            m.times = trace::make_stream_times(slot(stream.device()), stream.handle_);
            state = m.times ? 2 : 1;
            m.times_state.store(state, std::memory_order_release);
        }
    }
    return state == 2 ? m.times.get() : nullptr;
}

Result<const std::shared_ptr<memory::MemoryCore>*> detail::Access::core(const Stream& stream) {
    Stream::Memory& m = *stream.memory_;
    if (!m.bound.load(std::memory_order_acquire)) {
        std::lock_guard lock(m.mu);
        if (!m.bound.load(std::memory_order_relaxed)) {
            KEEL_TRY_ASSIGN(m.core, memory::shared_core(stream.device(), nullptr));
            m.bound.store(true, std::memory_order_release);
        }
    }
    return &m.core;
}

namespace {

// The new stream's count of fallible host functions; on failure the stream goes.
Result<void> count_fallible(const detail::DeviceSlot& device, keel_stream handle,
                           std::shared_ptr<detail::PendingFallible>& count) {
    try {
        count = detail::fallible::count_of(handle);
        return ok();
    } catch (const std::bad_alloc&) {
        (void)device.api().stream_destroy(handle);
        return Error(KEEL_STATUS_OUT_OF_MEMORY, "[Stream::create] out of host memory");
    }
}

}  // namespace

Result<Stream> Stream::create(const Device& device) {
    keel_stream handle = nullptr;
    auto memory = std::make_unique<Memory>();
    KEEL_TRY(detail::Access::slot(device).api().stream_create(detail::Access::handle(device), 0, &handle));
    KEEL_TRY(count_fallible(detail::Access::slot(device), handle, memory->pending_fallible));
    memory->generation = memory::register_stream(handle);
    memory->ledger = doctor::open_ledger(&detail::Access::slot(device), device.name(), handle, memory->generation);
    return Stream(device, handle, std::move(memory));
}

Result<Stream> Stream::create(const MemoryPool& memory) {
    auto bound = std::make_unique<Memory>();
    bound->core = detail::Access::core(memory);
    bound->bound.store(true, std::memory_order_relaxed);
    keel_stream handle = nullptr;
    const Device& device = memory.device();
    KEEL_TRY(detail::Access::slot(device).api().stream_create(detail::Access::handle(device), 0, &handle));
    KEEL_TRY(count_fallible(detail::Access::slot(device), handle, bound->pending_fallible));
    bound->generation = memory::register_stream(handle);
    bound->ledger = doctor::open_ledger(&detail::Access::slot(device), device.name(), handle, bound->generation);
    return Stream(device, handle, std::move(bound));
}

Stream::Stream(Device device, keel_stream handle, std::unique_ptr<Memory> memory) noexcept
    : device_(std::move(device)), handle_(handle), memory_(std::move(memory)) {}

Stream::Stream(Stream&& other) noexcept
    : device_(other.device_),
      handle_(std::exchange(other.handle_, nullptr)),
      memory_(std::move(other.memory_)) {}

Stream& Stream::operator=(Stream&& other) noexcept {
    if (this != &other) {
        if (auto r = close(); !r) detail::log_warn("[Stream::operator=] " + r.error().message());
        device_ = other.device_;
        handle_ = std::exchange(other.handle_, nullptr);
        memory_ = std::move(other.memory_);
    }
    return *this;
}

// The stream goes first (it waits for its work), then its reference to the
// memory instance.
Stream::~Stream() {
    if (auto r = close(); !r) detail::log_warn("[Stream::~Stream] " + r.error().message());
}

Result<void> Stream::close() {
    if (handle_ == nullptr) return ok();
    keel_stream handle = std::exchange(handle_, nullptr);
    const detail::PluginApi& api = detail::Access::slot(device_).api();
    // Closed means "its work is done" to the memory machinery, which then
    // stops calling the plugin on the handle: so the work is waited for
    // first, then the handle leaves the registry (waiting for such calls in
    // flight), and only then does the plugin destroy it. The sticky error
    // comes from the destroy, as before.
    {
        const doctor::HostWait waiting("Stream::close", memory_->ledger->last());
        if (auto drained = api.stream_synchronize(handle); !drained.ok())
            detail::log_debug("[Stream::close] " + drained.error().message());
    }
    detail::ordering::stream_gone(handle);  // its work is done: nothing waits for a point of it any more
    // The trace's times of its last operations, while its events can still be read.
    if (memory_->times_state.load(std::memory_order_acquire) == 2) memory_->times->close();
    doctor::close_ledger(memory_->ledger);
    memory::unregister_stream(handle);
    Result<void> destroyed = api.stream_destroy(handle);
    // Nothing of it is left behind in its memory instance: cached memory no
    // other stream reuses goes back, and the tracker forgets the stream.
    // Only after the destroy, which waits for the stream's work: a failed
    // synchronisation above may have returned while that work still ran.
    if (memory_->bound.load(std::memory_order_acquire)) memory::stream_closed(*memory_->core, handle);
    return destroyed;
}

namespace {

// The checks of the enqueues are inline and their messages built out of
// line, only on error: these are hot paths.
[[gnu::cold, gnu::noinline]] Error empty_stream(const char* where) {
    return Error(KEEL_STATUS_INVALID_ARGUMENT,
                 std::string("[") + where + "] the stream is empty (moved-from or closed)");
}

inline Result<void> check_stream(const Stream& s, const char* where) {
    if (s.empty()) [[unlikely]] return empty_stream(where);
    return ok();
}

[[gnu::cold, gnu::noinline]] Error foreign_view(const Stream& s, const char* where, const char* role,
                                                const detail::DeviceSlot* slot) {
    if (slot == nullptr)
        return Error(KEEL_STATUS_INVALID_ARGUMENT,
                     std::string("[") + where + "] " + role +
                         " is an empty view (a moved-from, freed or empty buffer)");
    return Error(KEEL_STATUS_INVALID_ARGUMENT, std::string("[") + where + "] " + role + " is memory of " +
                                                   slot->name + ", but the stream is on " + s.device().name());
}

inline Result<void> check_view(const Stream& s, const char* where, const char* role, const DeviceView& view) {
    const detail::DeviceSlot* slot = detail::Access::slot(view);
    if (slot != &detail::Access::slot(s.device())) [[unlikely]] return foreign_view(s, where, role, slot);
    return ok();
}

// Checked memory: [addr, addr + size) against the live range of its block
// in the stream's memory instance. One untaken branch when no instance is
// checked.
Result<void> check_live(const Stream& s, const char* where, const char* role, keel_device_addr addr,
                        std::uint64_t size) {
    if (!memory::checked_memory_anywhere()) [[likely]] return ok();
    KEEL_TRY_ASSIGN(const std::shared_ptr<memory::MemoryCore>* core, detail::Access::core(s));
    return (*core)->allocator().check_view(where, role, addr, size);
}

}  // namespace

Result<MemoryPool> Stream::memory() const {
    KEEL_TRY(check_stream(*this, "Stream::memory"));
    KEEL_TRY_ASSIGN(const std::shared_ptr<memory::MemoryCore>* core, detail::Access::core(*this));
    return detail::Access::memory(device_, *core);
}

Result<NativeHandle> Stream::native_handle() const {
    KEEL_TRY(check_stream(*this, "Stream::native_handle"));
    keel_native_handle handle{};
    handle.struct_size = sizeof handle;
    KEEL_TRY(detail::Access::slot(device_).api().stream_native_handle(handle_, &handle));
    return NativeHandle{handle.kind, handle.value};
}

Result<void> Stream::synchronize() const {
    KEEL_TRY(check_stream(*this, "Stream::synchronize"));
    trace::WaitScope waiting("Stream::synchronize", *this);
    const doctor::HostWait host_wait("Stream::synchronize", ledger_of(*this).last());
    return detail::Access::slot(device_).api().stream_synchronize(handle_);
}

Result<bool> Stream::query() const {
    KEEL_TRY(check_stream(*this, "Stream::query"));
    std::int32_t done = 0;
    KEEL_TRY(detail::Access::slot(device_).api().stream_query(handle_, &done));
    return done != 0;
}

// ---- ordering ----------------------------------------------------------------

Result<Fence> Stream::fence() const {
    KEEL_TRY(check_stream(*this, "Stream::fence"));
    KEEL_TRY_ASSIGN(const std::shared_ptr<memory::MemoryCore>* core, detail::Access::core(*this));
    trace::OpScope traced(*this, trace::Kind::fence, 0);
    KEEL_TRY_ASSIGN(Fence fence, memory::record_fence(*core, handle_));
    doctor::StreamLedger& ledger = ledger_of(*this);
    detail::Access::site(fence) = doctor::make_site(ledger.id(), ledger.note_blocking(doctor::OpKind::fence).index);
    return fence;
}

Result<void> Stream::wait(const Fence& fence) const {
    KEEL_TRY(check_stream(*this, "Stream::wait"));
    if (fence.empty()) return ok();  // an empty fence orders nothing
    const detail::DeviceSlot* theirs = detail::Access::device(fence);
    const detail::DeviceSlot& mine = detail::Access::slot(device_);
    trace::OpScope traced(*this, trace::Kind::wait_fence, 0);
    if (theirs == &mine) {
        cross_device::Origins carried = cross_device::origins_of_event(detail::Access::event(fence));
        KEEL_TRY(memory::wait_fence(fence, handle_));
        KEEL_TRY(detail::ordering::arrived_from_event(mine, handle_, detail::Access::event(fence), std::move(carried)));
    } else {
        auto r = cross_device::wait_event(mine, handle_, *theirs, detail::Access::event(fence));
        if (!r.ok()) return std::move(r).error().context("Stream::wait");
    }
    (void)ledger_of(*this).note_blocking(doctor::OpKind::wait_fence, detail::Access::site(fence));
    return ok();
}

Result<void> Stream::wait(const Event& event) const {
    KEEL_TRY(check_stream(*this, "Stream::wait"));
    if (event.empty())
        return Error(KEEL_STATUS_INVALID_ARGUMENT, "[Stream::wait] the event is empty (moved-from)");
    const detail::DeviceSlot* theirs = detail::Access::slot(event);
    const detail::DeviceSlot& mine = detail::Access::slot(device_);
    trace::OpScope traced(*this, trace::Kind::wait_event, 0);
    if (theirs == &mine) {
        cross_device::Origins carried = cross_device::origins_of_event(detail::Access::handle(event));
        KEEL_TRY(mine.api().stream_wait_event(handle_, detail::Access::handle(event)));
        KEEL_TRY(detail::ordering::arrived_from_event(mine, handle_, detail::Access::handle(event), std::move(carried)));
    } else {
        auto r = cross_device::wait_event(mine, handle_, *theirs, detail::Access::handle(event));
        if (!r.ok()) return std::move(r).error().context("Stream::wait");
    }
    (void)ledger_of(*this).note_blocking(doctor::OpKind::wait_event, detail::Access::site(event));
    return ok();
}

Result<void> Stream::order_after(const Stream& from) const {
    KEEL_TRY(check_stream(*this, "Stream::order_after"));
    if (from.empty())
        return Error(KEEL_STATUS_INVALID_ARGUMENT,
                     "[Stream::order_after] the stream to order after is empty (moved-from or closed)");
    if (from.handle_ == handle_) return ok();  // a stream is already in order with itself
    if (from.device() != device_) {
        KEEL_TRY_ASSIGN(const std::shared_ptr<memory::MemoryCore>* theirs, detail::Access::core(from));
        auto r = cross_device::order_after(detail::Access::slot(device_), handle_, detail::Access::slot(from.device()),
                                           from.handle_, *theirs);
        if (!r.ok()) return std::move(r).error().context("Stream::order_after");
        return ok();
    }
    KEEL_TRY_ASSIGN(const std::shared_ptr<memory::MemoryCore>* core, detail::Access::core(*this));
    const doctor::Site target = ledger_of(from).last();
    cross_device::Origins carried = cross_device::origins_of_stream(from.handle_);
    if (trace::on()) [[unlikely]] {
        // Traced as its two halves: the fence on `from`, the wait here.
        std::optional<trace::OpScope> fenced(std::in_place, from, trace::Kind::fence, 0);
        KEEL_TRY_ASSIGN(Fence fence, memory::record_fence(*core, from.handle_));
        fenced.reset();
        trace::OpScope traced(*this, trace::Kind::wait_fence, 0);
        KEEL_TRY(memory::wait_fence(fence, handle_));
    } else {
        KEEL_TRY(memory::order_after(*core, handle_, from.handle_));
    }
    KEEL_TRY(detail::ordering::arrived_from_stream(detail::Access::slot(device_), handle_, from.handle_,
                                                   std::move(carried)));
    (void)ledger_of(*this).note_blocking(doctor::OpKind::order_after, target);
    return ok();
}

// ---- copies ------------------------------------------------------------------

Result<void> Stream::copy_in(DeviceView dst, std::span<const std::byte> src, HostFunc keep_alive) const {
    KEEL_TRY(check_stream(*this, kCopy));
    KEEL_TRY(check_view(*this, kCopy, "the destination", dst));
    if (src.size() > dst.size()) return out_of_range(kCopy, "a copy", src.size(), "the destination", dst.size());
    if (src.empty()) return ok();
    if (src.data() == nullptr)
        return Error(KEEL_STATUS_INVALID_ARGUMENT, "[Stream::copy] the source is null with " +
                                                       std::to_string(src.size()) + " bytes");
    KEEL_TRY(check_live(*this, kCopy, "the destination", dst.address(), src.size()));
    KEEL_TRY_ASSIGN(const std::shared_ptr<memory::MemoryCore>* core, detail::Access::core(*this));
    trace::OpScope traced(*this, trace::Kind::copy_h2d, src.size(), keep_alive ? "(moved in)" : "(staged)");
    if (keep_alive) KEEL_TRY(memory::copy_to_device_owned(**core, handle_, dst.address(), src, std::move(keep_alive)));
    else KEEL_TRY(memory::copy_to_device(**core, handle_, dst.address(), src));
    ledger_of(*this).note(doctor::OpKind::copy);
    return ok();
}

Result<HostCopy> Stream::copy_out(std::span<std::byte> dst, DeviceView src) const {
    KEEL_TRY(check_stream(*this, kCopy));
    KEEL_TRY(check_view(*this, kCopy, "the source", src));
    if (src.size() > dst.size()) return out_of_range(kCopy, "the source", src.size(), "the destination", dst.size());
    if (src.size() == 0) return HostCopy();
    if (dst.data() == nullptr)
        return Error(KEEL_STATUS_INVALID_ARGUMENT, "[Stream::copy] the destination is null with " +
                                                       std::to_string(dst.size()) + " bytes");
    KEEL_TRY(check_live(*this, kCopy, "the source", src.address(), src.size()));
    KEEL_TRY_ASSIGN(const std::shared_ptr<memory::MemoryCore>* core, detail::Access::core(*this));
    trace::OpScope traced(*this, trace::Kind::copy_d2h, src.size(), "(to host memory)");
    KEEL_TRY_ASSIGN(HostCopy copy, memory::copy_from_device(*core, handle_, dst.first(static_cast<std::size_t>(src.size())),
                                                            src.address()));
    doctor::StreamLedger& ledger = ledger_of(*this);
    detail::Access::site(copy) = doctor::make_site(ledger.id(), ledger.note(doctor::OpKind::copy));
    return copy;
}

Result<void> Stream::check_elements(const DeviceView& src, std::size_t element_size) const {
    if (src.size() % element_size != 0)
        return Error(KEEL_STATUS_INVALID_ARGUMENT,
                     "[Stream::copy_to_vector] the source has " + std::to_string(src.size()) +
                         " bytes, not a whole number of " + std::to_string(element_size) + "-byte elements");
    return ok();
}

namespace {

// The buffer's memory goes only once this copy stopped running.
Result<void> note_pinned_use(const PinnedBuffer& buffer, const std::shared_ptr<memory::MemoryCore>& core,
                             keel_stream stream) {
    memory::PinnedUses* uses = detail::Access::uses(buffer);
    return uses != nullptr ? uses->note(core, stream) : ok();
}

}  // namespace

Result<void> Stream::copy(DeviceView dst, const PinnedBuffer& src) const { return copy_pinned_in(dst, src, {}); }

Result<void> Stream::copy(DeviceView dst, const PinnedBuffer& src, std::uint64_t offset) const {
    return copy_pinned_in(dst, src, offset);
}

Result<void> Stream::copy_pinned_in(DeviceView dst, const PinnedBuffer& src,
                                    std::optional<std::uint64_t> offset) const {
    KEEL_TRY(check_stream(*this, kCopy));
    KEEL_TRY(check_view(*this, kCopy, "the destination", dst));
    if (src.empty())
        return Error(KEEL_STATUS_INVALID_ARGUMENT, "[Stream::copy] the source pinned buffer is empty (moved-from)");
    // The whole buffer into the start of `dst`, or all of `dst` from the
    // buffer at `offset`.
    const std::uint64_t bytes = offset ? dst.size() : src.size();
    if (!offset && src.size() > dst.size())
        return out_of_range(kCopy, "the source pinned buffer", src.size(), "the destination", dst.size());
    if (offset && (*offset > src.size() || dst.size() > src.size() - *offset))
        return out_of_range(kCopy, "the destination", dst.size(),
                            ("the source pinned buffer from byte " + std::to_string(*offset)).c_str(), src.size());
    if (bytes == 0) return ok();
    KEEL_TRY(check_live(*this, kCopy, "the destination", dst.address(), bytes));
    KEEL_TRY_ASSIGN(const std::shared_ptr<memory::MemoryCore>* core, detail::Access::core(*this));
    const auto* from = static_cast<const std::byte*>(src.data()) + offset.value_or(0);
    trace::OpScope traced(*this, trace::Kind::copy_h2d, bytes, "(pinned)");
    KEEL_TRY(detail::Access::slot(device_).api().memcpy_h2d(handle_, dst.address(), from, bytes));
    ledger_of(*this).note(doctor::OpKind::copy);
    return note_pinned_use(src, *core, handle_);
}

Result<void> Stream::copy(PinnedBuffer& dst, DeviceView src) const { return copy_pinned_out(dst, 0, src); }

Result<void> Stream::copy(PinnedBuffer& dst, std::uint64_t offset, DeviceView src) const {
    return copy_pinned_out(dst, offset, src);
}

Result<void> Stream::copy_pinned_out(PinnedBuffer& dst, std::uint64_t offset, DeviceView src) const {
    KEEL_TRY(check_stream(*this, kCopy));
    KEEL_TRY(check_view(*this, kCopy, "the source", src));
    if (dst.empty())
        return Error(KEEL_STATUS_INVALID_ARGUMENT,
                     "[Stream::copy] the destination pinned buffer is empty (moved-from)");
    if (offset > dst.size() || src.size() > dst.size() - offset)
        return out_of_range(kCopy, "the source", src.size(),
                            offset == 0 ? "the destination pinned buffer"
                                        : ("the destination pinned buffer from byte " + std::to_string(offset)).c_str(),
                            dst.size());
    if (src.size() == 0) return ok();
    KEEL_TRY(check_live(*this, kCopy, "the source", src.address(), src.size()));
    KEEL_TRY_ASSIGN(const std::shared_ptr<memory::MemoryCore>* core, detail::Access::core(*this));
    auto* to = static_cast<std::byte*>(dst.data()) + offset;
    trace::OpScope traced(*this, trace::Kind::copy_d2h, src.size(), "(pinned)");
    KEEL_TRY(detail::Access::slot(device_).api().memcpy_d2h(handle_, to, src.address(), src.size()));
    ledger_of(*this).note(doctor::OpKind::copy);
    return note_pinned_use(dst, *core, handle_);
}

Result<void> Stream::copy(DeviceView dst, DeviceView src) const {
    KEEL_TRY(check_stream(*this, kCopy));
    const detail::DeviceSlot* mine = &detail::Access::slot(device_);
    if (detail::Access::slot(dst) != mine || detail::Access::slot(src) != mine) [[unlikely]] {
        // Between two devices: one side must be this stream's.
        if (dst.empty() || src.empty() || (detail::Access::slot(dst) != mine && detail::Access::slot(src) != mine)) {
            KEEL_TRY(check_view(*this, kCopy, "the destination", dst));
            KEEL_TRY(check_view(*this, kCopy, "the source", src));
        }
        if (src.size() > dst.size())
            return out_of_range(kCopy, "the source", src.size(), "the destination", dst.size());
        if (src.size() == 0) return ok();
        const bool writes_here = detail::Access::slot(dst) == mine;
        KEEL_TRY(check_live(*this, kCopy, writes_here ? "the destination" : "the source",
                            (writes_here ? dst : src).address(), src.size()));
        return copy_across(dst, src);
    }
    if (src.size() > dst.size()) return out_of_range(kCopy, "the source", src.size(), "the destination", dst.size());
    if (src.size() == 0) return ok();
    const bool overlap = dst.address() < src.address() + src.size() &&
                         src.address() < dst.address() + src.size();
    if (overlap)
        return Error(KEEL_STATUS_INVALID_ARGUMENT, "[Stream::copy] source and destination ranges overlap");
    if (memory::checked_memory_anywhere()) [[unlikely]] {
        KEEL_TRY(check_live(*this, kCopy, "the source", src.address(), src.size()));
        KEEL_TRY(check_live(*this, kCopy, "the destination", dst.address(), src.size()));
    }
    trace::OpScope traced(*this, trace::Kind::copy_d2d, src.size());
    KEEL_TRY(detail::Access::slot(device_).api().memcpy_d2d(handle_, dst.address(), src.address(), src.size()));
    ledger_of(*this).note(doctor::OpKind::copy);
    return ok();
}

Result<void> Stream::memset(DeviceView dst, std::uint8_t value) const {
    constexpr const char* where = "Stream::memset";
    KEEL_TRY(check_stream(*this, where));
    KEEL_TRY(check_view(*this, where, "the destination", dst));
    if (dst.size() == 0) return ok();
    KEEL_TRY(check_live(*this, where, "the destination", dst.address(), dst.size()));
    trace::OpScope traced(*this, trace::Kind::memset, dst.size());
    KEEL_TRY(detail::Access::slot(device_).api().memset_d8(handle_, dst.address(), value, dst.size()));
    ledger_of(*this).note(doctor::OpKind::memset);
    return ok();
}

Result<void> Stream::launch(const Kernel& kernel, const KernelArgs& args) const {
    KEEL_TRY(check_stream(*this, "Stream::launch"));
    // Messages are built only on error: this is a hot path.
    auto invalid = [&](const std::string& what) {
        return Error(KEEL_STATUS_INVALID_ARGUMENT, "[Stream::launch " + kernel.name() + "] " + what);
    };
    if (detail::Access::handle(kernel) == nullptr) return invalid("the kernel is empty");
    if (kernel.device() != device_)
        return invalid("the kernel is of " + kernel.device().name() + ", but the stream is on " +
                       device_.name());
    const detail::DeviceSlot* mine = &detail::Access::slot(device_);
    for (std::size_t i = 0; i < args.size(); ++i) {
        const detail::DeviceSlot* slot = detail::Access::device_of(args, i);
        if (slot != nullptr && slot != mine)
            return invalid("argument " + std::to_string(i) + " is memory of " + slot->name +
                           ", but the stream is on " + device_.name());
        if (detail::Access::is_empty_view(args, i))
            return invalid("argument " + std::to_string(i) +
                           " is an empty view (a moved-from, freed or empty buffer); use "
                           "KernelArgs::absent() for an absent optional buffer");
    }
    // Encoded on the stack, up to kInlineArgs: a launch allocates nothing.
    constexpr std::size_t kInlineArgs = 16;
    std::array<keel_kernel_arg, kInlineArgs> inline_args;
    std::vector<keel_kernel_arg> heap_args;
    std::span<keel_kernel_arg> encoded(inline_args.data(), std::min(args.size(), kInlineArgs));
    if (args.size() > kInlineArgs) {
        heap_args.resize(args.size());
        encoded = heap_args;
    }
    for (std::size_t i = 0; i < encoded.size(); ++i) encoded[i] = detail::Access::encoded(args, i);
    if (memory::checked_memory_anywhere()) [[unlikely]] {
        for (std::size_t i = 0; i < encoded.size(); ++i) {
            const keel_kernel_arg& a = encoded[i];
            if (a.kind != KEEL_ARG_BUFFER || (a.value.buffer.addr == 0 && a.value.buffer.size == 0)) continue;
            const std::string role = "argument " + std::to_string(i);
            KEEL_TRY(check_live(*this, "Stream::launch", role.c_str(), a.value.buffer.addr, a.value.buffer.size));
        }
    }
    keel_launch_args launch{};
    launch.struct_size = KEEL_LAUNCH_ARGS_STRUCT_SIZE;
    launch.args = encoded.data();
    launch.arg_count = encoded.size();
    launch.arg_struct_size = sizeof(keel_kernel_arg);
    trace::OpScope traced(*this, trace::Kind::kernel, 0, nullptr, trace::OpInfo{kernel.name()});
    KEEL_TRY(detail::Access::slot(device_).api().kernel_launch(handle_, detail::Access::handle(kernel), &launch));
    ledger_of(*this).note(doctor::OpKind::launch);
    return ok();
}

// ---- lifetimes and host work ---------------------------------------------------

Result<void> Stream::hold_func(HostFunc release) const {
    if (auto r = check_stream(*this, "Stream::hold"); !r) {
        release.run();  // no stream, so no work that could still use them
        return r;
    }
    auto core = detail::Access::core(*this);
    if (!core.ok()) {
        (void)synchronize();
        release.run();
        return std::move(core).error().context("Stream::hold");
    }
    trace::OpScope traced(*this, trace::Kind::hold, 0);
    KEEL_TRY(memory::hold_task(***core, handle_, std::move(release)));
    (void)ledger_of(*this).note_blocking(doctor::OpKind::hold);
    return ok();
}

bool Stream::host_funcs_can_fail() const noexcept {
    return !empty() && detail::Access::slot(device_).api().has_fallible_host_func();
}

Result<void> Stream::enqueue_host_func(HostFunc fn) const {
    KEEL_TRY(check_stream(*this, "Stream::enqueue_host_func"));
    std::unique_ptr<detail::HostFuncBase> callable = detail::Access::take(std::move(fn));
    if (!callable)
        return Error(KEEL_STATUS_INVALID_ARGUMENT,
                     "[Stream::enqueue_host_func] the host function is empty (moved-from)");
    const detail::PluginApi& api = detail::Access::slot(device_).api();
    trace::OpScope traced(*this, trace::Kind::host_func, 0);
    // Its place in the ledger first: it may run before the enqueue returns.
    const std::shared_ptr<doctor::StreamLedger>& ledger = memory_->ledger;
    const doctor::StreamLedger::Noted at = ledger->note_blocking(doctor::OpKind::host_func);
    const bool fallible = callable->fallible();
    const bool can_fail = fallible && api.has_fallible_host_func();
    try {
        // Counted until it finished, with the failure it returned or saw.
        if (can_fail) {
            detail::fallible::note_counting();
            callable = std::make_unique<detail::CountedHostFunc>(std::move(callable), memory_->pending_fallible);
        }
        callable = std::make_unique<doctor::TrackedHostFunc>(std::move(callable), ledger, at);
    } catch (const std::bad_alloc&) {
        ledger->abandoned(at.slot);
        return Error(KEEL_STATUS_OUT_OF_MEMORY, "[Stream::enqueue_host_func] out of host memory");
    }
    Result<void> enqueued = can_fail
                                ? api.stream_enqueue_fallible_host_func(
                                      handle_, &detail::fallible_host_func_trampoline, callable.get())
                                : api.stream_enqueue_host_func(handle_, &detail::host_func_trampoline, callable.get());
    if (!enqueued.ok()) {
        ledger->abandoned(at.slot);  // never runs, and blocks nothing
        return enqueued;
    }
    // Enqueued: the trampoline owns it now. On error it is destroyed here.
    (void)callable.release();
    return ok();
}

}  // namespace keel
