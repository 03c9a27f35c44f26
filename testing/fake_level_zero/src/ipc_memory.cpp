// Memory IPC as Level Zero 1.x has it on Linux: zeMemGetIpcHandle's 64
// opaque bytes carry a file descriptor in their first four (where Intel's
// driver puts its dma-buf descriptor), which the exporter sends with
// SCM_RIGHTS and the importer writes back, as its own number, before
// zeMemOpenIpcHandle. Here a memfd stands in for the dma-buf: the importer
// maps the very pages the exporter's device memory lives in, so writes on
// either side are seen on the other, and the pages live until the exporter
// freed and every importer closed (the kernel counts the mappings).
#include "api.hpp"
#include "fake.hpp"
#include "ipc_memory.hpp"

#include <cstdint>
#include <cstring>
#include <string>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace fake_ze {

namespace {

constexpr const char* kMemfdName = "fake-ze-device-memory";
constexpr std::uint32_t kIpcHandleMagic = 0x657a4b46;  // "FKze"

// The fake's layout of ze_ipc_mem_handle_t::data.
struct HandleData {
    std::int32_t fd;      // first: what applications swap for their own descriptor
    std::uint32_t magic;  // kIpcHandleMagic
    std::uint64_t size;   // bytes of the allocation
    std::uint64_t base;   // the exporter's address (names it in messages only)
};
static_assert(sizeof(HandleData) <= ZE_MAX_IPC_HANDLE_SIZE);

}  // namespace

std::size_t page_rounded(std::size_t bytes) {
    const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    return (bytes + page - 1) / page * page;
}

bool is_driver_memfd(int fd, const char* name, std::size_t length) {
    char target[128] = {};
    const std::string link = "/proc/self/fd/" + std::to_string(fd);
    const ssize_t n = ::readlink(link.c_str(), target, sizeof target - 1);
    if (n <= 0) return false;
    const std::string expected = std::string("/memfd:") + name;
    if (std::strncmp(target, expected.c_str(), expected.size()) != 0) return false;
    struct stat st{};
    return ::fstat(fd, &st) == 0 && static_cast<std::size_t>(st.st_size) == length;
}

OwnedFd& OwnedFd::operator=(OwnedFd&& other) noexcept {
    if (this != &other) {
        if (fd_ >= 0) ::close(fd_);
        fd_ = other.release();
    }
    return *this;
}

OwnedFd::~OwnedFd() {
    if (fd_ >= 0) ::close(fd_);
}

bool asks_for_export(const void* next) noexcept {
    for (auto* s = static_cast<const ze_base_desc_t*>(next); s != nullptr;
         s = static_cast<const ze_base_desc_t*>(s->pNext)) {
        if (s->stype != ZE_STRUCTURE_TYPE_EXTERNAL_MEMORY_EXPORT_DESC) continue;
        const auto* desc = reinterpret_cast<const ze_external_memory_export_desc_t*>(s);
        if ((desc->flags & ZE_EXTERNAL_MEMORY_TYPE_FLAG_DMA_BUF) != 0) return true;
    }
    return false;
}

bool back_with_memfd(Allocation& a) {
    OwnedFd fd(::memfd_create(kMemfdName, MFD_CLOEXEC));
    if (fd.get() < 0) return false;
    const std::size_t length = page_rounded(a.size);
    if (::ftruncate(fd.get(), static_cast<off_t>(length)) != 0) return false;
    void* p = ::mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
    if (p == MAP_FAILED) return false;
    a.storage = {static_cast<std::byte*>(p), Allocation::Free{length}};
    a.memfd = std::move(fd);
    a.sharing = Sharing::exportable;
    return true;
}

namespace api {

ze_result_t ZE_APICALL zeMemGetIpcHandle(ze_context_handle_t context, const void* ptr, ze_ipc_mem_handle_t* handle) {
    FAKE_ZE_INJECT("zeMemGetIpcHandle");
    if (context == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (ptr == nullptr || handle == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    Driver& driver = Driver::get();
    std::lock_guard lock(driver.mutex);
    if (!driver.config.ipc) return ZE_RESULT_ERROR_UNSUPPORTED_FEATURE;
    const auto address = reinterpret_cast<std::uintptr_t>(ptr);
    const Allocation* a = driver.holding(address, 1);
    if (a == nullptr || a->type != ZE_MEMORY_TYPE_DEVICE || a->base != address)
        return ZE_RESULT_ERROR_INVALID_ARGUMENT;
    // Real drivers export any device allocation; the fake only what has a
    // memfd behind it (allocated with ze_external_memory_export_desc_t).
    if (a->sharing != Sharing::exportable) return ZE_RESULT_ERROR_UNSUPPORTED_FEATURE;
    // The descriptor stays the driver's (valid until zeMemFree).
    const HandleData data{a->memfd.get(), kIpcHandleMagic, a->size, a->base};
    std::memset(handle->data, 0, sizeof handle->data);
    std::memcpy(handle->data, &data, sizeof data);
    return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL zeMemOpenIpcHandle(ze_context_handle_t context, ze_device_handle_t device_handle,
                                          ze_ipc_mem_handle_t handle, ze_ipc_memory_flags_t flags, void** ptr) {
    FAKE_ZE_INJECT("zeMemOpenIpcHandle");
    if (context == nullptr || device_handle == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (ptr == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (flags > 0x3) return ZE_RESULT_ERROR_INVALID_ENUMERATION;
    HandleData data{};
    std::memcpy(&data, handle.data, sizeof data);
    if (data.magic != kIpcHandleMagic || data.size == 0 || data.fd < 0) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
    const std::size_t length = page_rounded(data.size);
    if (!is_driver_memfd(data.fd, kMemfdName, length)) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
    // The caller's descriptor is read, never kept: the mapping holds the pages.
    void* p = ::mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_SHARED, data.fd, 0);
    if (p == MAP_FAILED) return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    auto a = std::make_unique<Allocation>();
    a->storage = {static_cast<std::byte*>(p), Allocation::Free{length}};
    Device* device = from_handle<Device>(device_handle);
    Driver& driver = Driver::get();
    std::lock_guard lock(driver.mutex);
    if (!driver.config.ipc) return ZE_RESULT_ERROR_UNSUPPORTED_FEATURE;
    if (device->lost) return ZE_RESULT_ERROR_DEVICE_LOST;
    const std::uint64_t base = (driver.next_device_address + 255) & ~std::uint64_t{255};
    driver.next_device_address = base + data.size;
    a->context = from_handle<Context>(context);
    a->type = ZE_MEMORY_TYPE_DEVICE;
    a->device = device;
    a->base = base;
    a->size = data.size;
    a->sharing = Sharing::imported;
    driver.allocations.emplace(base, std::move(a));
    ++driver.live;
    *ptr = reinterpret_cast<void*>(static_cast<std::uintptr_t>(base));
    return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL zeMemCloseIpcHandle(ze_context_handle_t context, const void* ptr) {
    FAKE_ZE_INJECT("zeMemCloseIpcHandle");
    if (context == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (ptr == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    Driver& driver = Driver::get();
    std::unique_ptr<Allocation> closed;
    {
        std::lock_guard lock(driver.mutex);
        auto it = driver.allocations.find(reinterpret_cast<std::uintptr_t>(ptr));
        if (it == driver.allocations.end() || it->second->sharing != Sharing::imported)
            return ZE_RESULT_ERROR_INVALID_ARGUMENT;
        if (it->second->users != 0) violation("zeMemCloseIpcHandle of memory a pending command still uses");
        closed = std::move(it->second);
        driver.allocations.erase(it);
        --driver.live;
    }
    return ZE_RESULT_SUCCESS;  // unmapped here, outside the lock
}

// Intel's extension: the memory objects (one descriptor each) an allocation
// is made of. The fake makes every exportable allocation of one object, and
// reports fake_ze_split_ipc_memory's count (a multi-tile GPU under implicit
// scaling splits allocations); it never hands out the handles themselves.
ze_result_t ZE_APICALL zexMemGetIpcHandles(ze_context_handle_t context, const void* ptr, uint32_t* count,
                                           ze_ipc_mem_handle_t* handles) {
    FAKE_ZE_INJECT("zexMemGetIpcHandles");
    if (context == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (ptr == nullptr || count == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    Driver& driver = Driver::get();
    const std::uint32_t objects = driver.ipc_memory_objects.load();
    {
        std::lock_guard lock(driver.mutex);
        if (!driver.config.ipc) return ZE_RESULT_ERROR_UNSUPPORTED_FEATURE;
        const Allocation* a = driver.holding(reinterpret_cast<std::uintptr_t>(ptr), 1);
        if (a == nullptr || a->type != ZE_MEMORY_TYPE_DEVICE) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
        if (a->sharing != Sharing::exportable) return ZE_RESULT_ERROR_UNSUPPORTED_FEATURE;
        if (handles == nullptr || *count == 0) {
            *count = objects;
            return ZE_RESULT_SUCCESS;
        }
    }
    if (objects != 1) return ZE_RESULT_ERROR_UNSUPPORTED_FEATURE;  // split handles are not modelled
    *count = 1;
    return api::zeMemGetIpcHandle(context, ptr, handles);
}

}  // namespace api

}  // namespace fake_ze
