// Immediate command lists, each executed by its own worker thread.
//
// Appends return at once; the worker runs a command when its wait events
// are signalled and no barrier before it is pending, then signals its event.
// In the default "relaxed" order the worker picks the newest such command,
// which the specification allows (commands of a list are not ordered unless
// events or barriers order them), so that a caller relying on append order
// sees wrong results instead of passing by luck.
#include "api.hpp"
#include "fake.hpp"
#include "host_kernels.hpp"

#include <chrono>
#include <cstring>

namespace fake_ze::api {

namespace {

constexpr std::size_t kNone = static_cast<std::size_t>(-1);

CommandList* list_of(ze_command_list_handle_t handle) { return from_handle<CommandList>(handle); }

bool eligible(const CommandList& list, std::size_t position) {
    const Command& c = *list.queue[position];
    if (c.running) return false;
    for (const Event* e : c.waits)
        if (!is_signalled(*e)) return false;
    if (c.op == Op::barrier) return position == 0;  // everything before it completed
    for (std::size_t i = 0; i < position; ++i)
        if (list.queue[i]->op == Op::barrier) return false;
    return true;
}

bool waits_for_shared(const CommandList& list) {
    for (const auto& c : list.queue)
        for (const Event* e : c->waits)
            if (e->shared != nullptr && !is_signalled(*e)) return true;
    return false;
}

std::size_t pick(const CommandList& list, bool relaxed) {
    if (list.queue.empty()) return kNone;
    if (!relaxed) return eligible(list, 0) ? 0 : kNone;
    for (std::size_t i = list.queue.size(); i-- > 0;)
        if (eligible(list, i)) return i;
    return kNone;
}

// The command's effect; runs without the driver lock.
void execute(Command& c) {
    switch (c.op) {
        case Op::copy:
            std::memmove(c.dst, c.src, c.size);
            break;
        case Op::fill:
            for (std::size_t offset = 0; offset < c.size; offset += c.pattern_size)
                std::memcpy(static_cast<std::byte*>(c.dst) + offset, c.pattern, c.pattern_size);
            break;
        case Op::kernel:
            c.kernel->run(c.args, c.global_size);
            break;
        case Op::barrier:
            break;
    }
}

// Releases what the command held; `completed` also signals its event (and
// gives it the command's kernel timestamps, if its pool has them).
void retire(Command& c, bool completed) {
    for (Event* e : c.waits) --e->waiters;
    if (c.signal != nullptr) {
        --c.signal->signallers;
        if (completed) {
            set_signalled(*c.signal, true);
            if ((c.signal->pool->flags & ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP) != 0) {
                constexpr std::uint64_t mask = (1ull << kKernelTimestampBits) - 1;
                const ze_kernel_timestamp_data_t ran{c.started & mask, timer_ticks() & mask};
                c.signal->timestamps = {ran, ran};
            }
        }
    }
    for (Allocation* a : c.uses) --a->users;
}

void work(CommandList* list) {
    Driver& driver = Driver::get();
    std::unique_lock lock(driver.mutex);
    for (;;) {
        Device& device = *list->device;
        if (device.lost && !list->queue.empty()) {
            for (auto& c : list->queue) retire(*c, false);
            list->queue.clear();
            driver.changed.notify_all();
        }
        if (list->stopping && list->queue.empty()) return;
        const std::size_t position = pick(*list, driver.config.relaxed);
        if (position == kNone) {
            // Another process signals a shared event without notifying
            // `changed`: a list waiting for one looks again every 200 us.
            if (waits_for_shared(*list))
                driver.changed.wait_for(lock, std::chrono::microseconds(200));
            else
                driver.changed.wait(lock);
            continue;
        }
        if (device.lose_countdown > 0 && --device.lose_countdown == 0) {
            device.lost = true;
            driver.changed.notify_all();
            continue;
        }
        Command& c = *list->queue[position];
        c.running = true;
        c.started = timer_ticks();
        lock.unlock();
        execute(c);
        lock.lock();
        retire(c, true);
        list->queue.erase(list->queue.begin() + static_cast<std::ptrdiff_t>(position));
        ++driver.completed;
        driver.changed.notify_all();
    }
}

// Marks a command list busy for one append; two at once break the spec.
// The yield widens the window, so that unserialised callers meet in it.
class InCall {
public:
    explicit InCall(CommandList& list) : list_(list) {
        if (list_.in_call.exchange(true, std::memory_order_acquire))
            violation("a command list used by two threads at once (appends must be serialised)");
        std::this_thread::yield();
    }
    InCall(const InCall&) = delete;
    InCall& operator=(const InCall&) = delete;
    ~InCall() { list_.in_call.store(false, std::memory_order_release); }

private:
    CommandList& list_;
};

// Host storage of [address, address + size), which must lie in memory the
// device can access; `uses` collects the allocation.
void* translate(Driver& driver, const void* address, std::size_t size, const char* what,
                std::vector<Allocation*>& uses) {
    const auto value = reinterpret_cast<std::uintptr_t>(address);
    Allocation* a = driver.holding(value, size);
    if (a == nullptr)
        violation(std::string(what) + " " + std::to_string(value) + " + " + std::to_string(size) +
                  " bytes is not inside memory from zeMemAllocDevice/zeMemAllocHost, so the device cannot access it");
    uses.push_back(a);
    return a->storage.get() + (value - a->base);
}

// Queues `c` on `list` with its events; the common end of every append.
ze_result_t append(CommandList& list, std::unique_ptr<Command> c, ze_event_handle_t signal, uint32_t wait_count,
                   ze_event_handle_t* waits) {
    Driver& driver = Driver::get();
    if (wait_count > 0 && waits == nullptr) return ZE_RESULT_ERROR_INVALID_SIZE;
    for (uint32_t i = 0; i < wait_count; ++i) {
        if (waits[i] == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
        c->waits.push_back(from_handle<Event>(waits[i]));
    }
    c->signal = from_handle<Event>(signal);
    if (c->signal != nullptr && (is_signalled(*c->signal) || c->signal->signallers > 0))
        violation("a command appended to signal an event that is already signalled, or will be by another "
                  "pending command: reset it first");
    for (Event* e : c->waits) ++e->waiters;
    if (c->signal != nullptr) ++c->signal->signallers;
    for (Allocation* a : c->uses) ++a->users;
    list.queue.push_back(std::move(c));
    driver.changed.notify_all();
    return ZE_RESULT_SUCCESS;
}

// The common front of every append: the list, used by one thread at a time,
// locked, on a device not lost; `fill` makes the command's payload (or
// returns an error) and the command is queued with its events.
template <class Fill>
ze_result_t append_command(ze_command_list_handle_t handle, Op op, ze_event_handle_t signal, uint32_t wait_count,
                           ze_event_handle_t* waits, Fill&& fill) {
    if (handle == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    CommandList& list = *list_of(handle);
    InCall busy(list);
    Driver& driver = Driver::get();
    std::lock_guard lock(driver.mutex);
    if (list.device->lost) return ZE_RESULT_ERROR_DEVICE_LOST;
    auto c = std::make_unique<Command>();
    c->op = op;
    if (const ze_result_t r = fill(list, driver, *c); r != ZE_RESULT_SUCCESS) return r;
    return append(list, std::move(c), signal, wait_count, waits);
}

}  // namespace

ze_result_t ZE_APICALL zeCommandListCreateImmediate(ze_context_handle_t context, ze_device_handle_t device,
                                                    const ze_command_queue_desc_t* desc,
                                                    ze_command_list_handle_t* handle) {
    FAKE_ZE_INJECT("zeCommandListCreateImmediate");
    if (context == nullptr || device == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (desc == nullptr || handle == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    // Queue groups (driver.cpp): 0 copy-only with 2 queues, 1 compute with 4.
    if (desc->ordinal > 1 || desc->index >= (desc->ordinal == 0 ? 2u : 4u)) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
    auto list = std::make_unique<CommandList>();
    list->context = from_handle<Context>(context);
    list->device = from_handle<Device>(device);
    list->compute = desc->ordinal == 1;
    Driver& driver = Driver::get();
    {
        std::lock_guard lock(driver.mutex);
        if (list->device->lost) return ZE_RESULT_ERROR_DEVICE_LOST;
        ++list->context->objects;
        ++driver.live;
    }
    CommandList* raw = list.get();
    list->worker = std::thread([raw] { work(raw); });
    *handle = to_handle<ze_command_list_handle_t>(list.release());
    return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL zeCommandListDestroy(ze_command_list_handle_t handle) {
    if (handle == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    std::unique_ptr<CommandList> list(list_of(handle));
    Driver& driver = Driver::get();
    {
        std::lock_guard lock(driver.mutex);
        if (!list->queue.empty() && !list->device->lost)
            violation("zeCommandListDestroy with " + std::to_string(list->queue.size()) +
                      " command(s) not yet completed");
        list->stopping = true;
        --list->context->objects;
        --driver.live;
    }
    driver.changed.notify_all();
    list->worker.join();
    return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL zeCommandListAppendBarrier(ze_command_list_handle_t handle, ze_event_handle_t signal,
                                                  uint32_t wait_count, ze_event_handle_t* waits) {
    FAKE_ZE_INJECT("zeCommandListAppendBarrier");
    return append_command(handle, Op::barrier, signal, wait_count, waits,
                          [](CommandList&, Driver&, Command&) { return ZE_RESULT_SUCCESS; });
}

ze_result_t ZE_APICALL zeCommandListAppendMemoryCopy(ze_command_list_handle_t handle, void* dst, const void* src,
                                                     size_t size, ze_event_handle_t signal, uint32_t wait_count,
                                                     ze_event_handle_t* waits) {
    FAKE_ZE_INJECT("zeCommandListAppendMemoryCopy");
    if (dst == nullptr || src == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    return append_command(handle, Op::copy, signal, wait_count, waits, [&](CommandList&, Driver& driver, Command& c) {
        c.dst = translate(driver, dst, size, "zeCommandListAppendMemoryCopy destination", c.uses);
        c.src = translate(driver, src, size, "zeCommandListAppendMemoryCopy source", c.uses);
        c.size = size;
        return ZE_RESULT_SUCCESS;
    });
}

ze_result_t ZE_APICALL zeCommandListAppendMemoryFill(ze_command_list_handle_t handle, void* ptr, const void* pattern,
                                                     size_t pattern_size, size_t size, ze_event_handle_t signal,
                                                     uint32_t wait_count, ze_event_handle_t* waits) {
    FAKE_ZE_INJECT("zeCommandListAppendMemoryFill");
    if (ptr == nullptr || pattern == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    return append_command(handle, Op::fill, signal, wait_count, waits, [&](CommandList& list, Driver& driver, Command& c) {
        if (pattern_size == 0 || (pattern_size & (pattern_size - 1)) != 0 ||
            pattern_size > (list.compute ? 128u : 4u) || size % pattern_size != 0)
            return ZE_RESULT_ERROR_INVALID_SIZE;
        c.dst = translate(driver, ptr, size, "zeCommandListAppendMemoryFill destination", c.uses);
        // Read when the fill runs, so the caller must keep it until then.
        c.pattern = pattern;
        c.pattern_size = pattern_size;
        c.size = size;
        return ZE_RESULT_SUCCESS;
    });
}

ze_result_t ZE_APICALL zeCommandListAppendLaunchKernel(ze_command_list_handle_t handle, ze_kernel_handle_t kernel_handle,
                                                       const ze_group_count_t* groups, ze_event_handle_t signal,
                                                       uint32_t wait_count, ze_event_handle_t* waits) {
    FAKE_ZE_INJECT("zeCommandListAppendLaunchKernel");
    if (kernel_handle == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (groups == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    Kernel& kernel = *from_handle<Kernel>(kernel_handle);
    if (kernel.in_call.exchange(true, std::memory_order_acquire))
        violation("a kernel used by two threads at once (its arguments are state)");
    struct Release {
        Kernel& k;
        ~Release() { k.in_call.store(false, std::memory_order_release); }
    } release{kernel};
    return append_command(handle, Op::kernel, signal, wait_count, waits, [&](CommandList& list, Driver& driver, Command& c) {
        if (!list.compute) return ZE_RESULT_ERROR_INVALID_COMMAND_LIST_TYPE;
        c.kernel = kernel.twin;
        c.global_size = static_cast<std::uint64_t>(groups->groupCountX) * kernel.group_size[0];
        for (std::size_t i = 0; i < kernel.args.size(); ++i) {
            if (!kernel.args[i]) violation("kernel " + kernel.name + " launched with argument " + std::to_string(i) + " unset");
            std::vector<std::byte> value = *kernel.args[i];
            if (kernel.twin->params[i].pointer) {
                void* address = nullptr;
                std::memcpy(&address, value.data(), sizeof address);
                if (address != nullptr) {
                    const std::string what = "kernel " + kernel.name + " argument " + std::to_string(i);
                    void* host = translate(driver, address, 0, what.c_str(), c.uses);
                    std::memcpy(value.data(), &host, sizeof host);
                }
            }
            c.args.push_back(std::move(value));
        }
        return ZE_RESULT_SUCCESS;
    });
}

}  // namespace fake_ze::api
