// The fake Level Zero driver's device model: one lock, host memory behind
// non-host-addressable device addresses, events, and command lists that
// worker threads execute asynchronously. Never installed; tests only.
//
// Every object below is guarded by Driver::mutex unless it says otherwise;
// worker threads release the lock only while a command's payload runs.
#pragma once

#include <level_zero/ze_api.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace fake_ze {

// A use the Level Zero specification forbids: prints it and aborts.
[[noreturn]] void violation(const std::string& what);

// The injected result for this call of `function` (fake_ze_fail_calls), or
// ZE_RESULT_SUCCESS to run it normally.
[[nodiscard]] ze_result_t injected(const char* function);
#define FAKE_ZE_INJECT(name) \
    if (const ze_result_t injected_ = ::fake_ze::injected(name); injected_ != ZE_RESULT_SUCCESS) return injected_

struct HostKernel;

struct Device {
    std::uint32_t index = 0;
    ze_device_type_t type = ZE_DEVICE_TYPE_GPU;
    std::string name;
    std::uint64_t memory = 0;
    std::uint64_t used = 0;
    bool lost = false;
    std::uint64_t lose_countdown = 0;  // commands to start before it is lost; 0: never
};

struct Context {
    std::uint64_t objects = 0;  // lists, pools, modules made in it and alive
};

// Frees an allocation's storage: mmap'ed (`mapped` bytes), or else
// std::aligned_alloc'ed.
struct StorageFree {
    std::size_t mapped = 0;
    void operator()(std::byte* p) const noexcept;
};

// A descriptor the driver owns, closed with its allocation. Move-only.
class OwnedFd {
public:
    OwnedFd() noexcept = default;
    explicit OwnedFd(int fd) noexcept : fd_(fd) {}
    OwnedFd(const OwnedFd&) = delete;
    OwnedFd& operator=(const OwnedFd&) = delete;
    OwnedFd(OwnedFd&& other) noexcept : fd_(other.release()) {}
    OwnedFd& operator=(OwnedFd&& other) noexcept;
    ~OwnedFd();
    [[nodiscard]] int get() const noexcept { return fd_; }
    int release() noexcept {
        const int fd = fd_;
        fd_ = -1;
        return fd;
    }

private:
    int fd_ = -1;
};

// `bytes` rounded up to whole pages: the size of a memfd shared by mapping.
[[nodiscard]] std::size_t page_rounded(std::size_t bytes);
// Whether `fd` is a memfd this driver made as `name` (in any process),
// `length` bytes long: what an IPC handle's descriptor must be.
[[nodiscard]] bool is_driver_memfd(int fd, const char* name, std::size_t length);

// How an allocation can cross a process boundary (ipc_memory.cpp).
enum class Sharing {
    none,
    // Allocated with ze_external_memory_export_desc_t (DMA_BUF): its storage
    // is a memfd, the fake's stand-in for a dma-buf, which zeMemGetIpcHandle
    // hands out.
    exportable,
    // Opened with zeMemOpenIpcHandle: a mapping of another allocation's
    // memfd, closed with zeMemCloseIpcHandle, never freed.
    imported,
};

// Device memory lives in `storage` and is named by an address the host
// cannot dereference (non-canonical on x86-64); host memory is its own address.
struct Allocation {
    Context* context = nullptr;
    ze_memory_type_t type = ZE_MEMORY_TYPE_UNKNOWN;
    Device* device = nullptr;  // null for host memory
    std::uint64_t base = 0;
    std::size_t size = 0;
    using Free = StorageFree;
    std::unique_ptr<std::byte[], Free> storage;
    int users = 0;  // pending commands that use it
    Sharing sharing = Sharing::none;
    OwnedFd memfd;  // exportable: the memfd behind `storage`
};

struct Event;

// The states of an IPC pool's events (ZE_EVENT_POOL_FLAG_IPC) live in a
// memfd mapped shared, one word each, so that a signal in one process is
// seen by the processes that opened the pool (ipc_events.cpp).
struct SharedStates {
    OwnedFd memfd;
    std::atomic<std::uint32_t>* words = nullptr;  // one per event; 1: signalled
    std::size_t mapped = 0;                        // bytes of the mapping
    SharedStates() = default;
    SharedStates(const SharedStates&) = delete;
    SharedStates& operator=(const SharedStates&) = delete;
    ~SharedStates();
};

struct EventPool {
    Context* context = nullptr;
    ze_event_pool_flags_t flags = 0;
    std::vector<Device*> devices;  // empty: every device
    std::vector<Event*> events;    // by index, null where none was created
    std::uint32_t live = 0;
    std::unique_ptr<SharedStates> shared;  // IPC pools only
    bool opened = false;  // from zeEventPoolOpenIpcHandle: closed, never destroyed
};

// The device timer: Intel GPUs count at 19.2 MHz; kernel timestamps keep
// its low 32 bits, so they wrap (every 224 s) as on hardware.
constexpr std::uint64_t kTimerHz = 19'200'000;
constexpr std::uint32_t kKernelTimestampBits = 32;
[[nodiscard]] std::uint64_t timer_ticks() noexcept;
// What a kernel-timestamp event reads after a host signal or a reset
// (undefined by the specification): far from any real tick.
constexpr std::uint64_t kUndefinedTimestamp = 0x5a5a5a5aull;

struct Event {
    EventPool* pool = nullptr;
    std::uint32_t index = 0;
    // Read and written through is_signalled/set_signalled: an event of an
    // IPC pool keeps its state in the pool's shared mapping instead.
    bool signalled = false;
    std::atomic<std::uint32_t>* shared = nullptr;
    // Pools with ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP: when the command that
    // signalled it ran, in timer ticks.
    ze_kernel_timestamp_result_t timestamps{{kUndefinedTimestamp, kUndefinedTimestamp},
                                            {kUndefinedTimestamp, kUndefinedTimestamp}};
    int waiters = 0;     // pending commands waiting for it
    int signallers = 0;  // pending commands that will signal it
};

enum class Op { copy, fill, barrier, kernel };

struct Command {
    Op op = Op::barrier;
    std::vector<Event*> waits;
    Event* signal = nullptr;
    std::vector<Allocation*> uses;  // counted in Allocation::users
    // copy: dst <- src, size bytes; fill: dst <- pattern repeated;
    // pointers already translated.
    void* dst = nullptr;
    const void* src = nullptr;
    std::size_t size = 0;
    const void* pattern = nullptr;  // read when the fill runs
    std::size_t pattern_size = 0;
    std::uint64_t started = 0;  // timer ticks, when it began to run
    // kernel
    const HostKernel* kernel = nullptr;
    std::vector<std::vector<std::byte>> args;  // pointer arguments already translated
    std::uint64_t global_size = 0;
    bool running = false;
};

struct CommandList {
    Context* context = nullptr;
    Device* device = nullptr;
    bool compute = false;  // its queue group supports compute
    std::deque<std::unique_ptr<Command>> queue;
    bool stopping = false;
    std::atomic<bool> in_call{false};  // an append is running: detects concurrent use (not guarded)
    std::thread worker;
};

struct Module {
    Context* context = nullptr;
    Device* device = nullptr;
    // Entry point name -> parameter sizes in bytes, read from the SPIR-V.
    std::map<std::string, std::vector<std::uint32_t>> entry_points;
    std::uint32_t kernels = 0;  // alive
};

struct Kernel {
    Module* module = nullptr;
    std::string name;
    const HostKernel* twin = nullptr;
    std::vector<std::uint32_t> param_sizes;
    std::vector<std::optional<std::vector<std::byte>>> args;
    std::uint32_t group_size[3] = {1, 1, 1};
    std::atomic<bool> in_call{false};  // detects concurrent use (not guarded)
};

struct Config {
    // Two GPUs unless FAKE_ZE_DEVICES says otherwise: enough for the
    // multi-device paths (staged copies, bridged waits) without a setting.
    std::vector<ze_device_type_t> devices{ZE_DEVICE_TYPE_GPU, ZE_DEVICE_TYPE_GPU};
    std::uint64_t memory = 2ull << 30;
    // Host memory of zeMemAllocHost, all contexts together (FAKE_ZE_HOST_MEMORY):
    // page-locked memory is a bounded resource on a real machine.
    std::uint64_t host_memory = UINT64_MAX;
    bool relaxed = true;
    bool fp64 = true;
    // zeDriverGetIpcProperties reports memory IPC (FAKE_ZE_NO_IPC=1: none).
    bool ipc = true;
};

// The driver: one per process, created at the first zeInit.
class Driver {
public:
    static Driver& get();

    std::mutex mutex;
    std::condition_variable changed;  // events, queues or device state changed

    Config config;                                      // immutable after start()
    std::vector<std::unique_ptr<Device>> devices;       // immutable after start()
    std::map<std::uint64_t, std::unique_ptr<Allocation>> allocations;  // by base
    std::uint64_t next_device_address = 0x4d00000000000000ull;
    std::uint64_t host_used = 0;  // bytes of zeMemAllocHost memory alive
    std::atomic<std::uint64_t> completed{0};
    std::atomic<std::int64_t> live{0};
    // Memory objects an exportable allocation is made of, as
    // zexMemGetIpcHandles counts them (fake_ze_split_ipc_memory; 1: one).
    std::atomic<std::uint32_t> ipc_memory_objects{1};

    // Reads the configuration and makes the devices, once. Thread-safe.
    void start();

    // Whether `event` can no longer be signalled by its lost device(s).
    [[nodiscard]] bool lost_for(const Event& event) const;
    // The allocation holding [address, address + size), or null.
    [[nodiscard]] Allocation* holding(std::uint64_t address, std::size_t size);
};

// An event's state, wherever it lives (ipc_events.cpp). Setting a shared
// state wakes host waiters of every process (a futex on the word).
[[nodiscard]] bool is_signalled(const Event& e) noexcept;
void set_signalled(Event& e, bool on) noexcept;
// Waits, with `lock` (on Driver::mutex) released, until a shared event is
// signalled, its device is lost or `deadline` passed; `lock` is held again
// on return.
void wait_shared(Event& e, std::unique_lock<std::mutex>& lock, std::chrono::steady_clock::time_point deadline);

// Handles are the objects' addresses.
template <class T, class H>
T* from_handle(H handle) noexcept {
    return reinterpret_cast<T*>(handle);
}
template <class H, class T>
H to_handle(T* object) noexcept {
    return reinterpret_cast<H>(object);
}

}  // namespace fake_ze
