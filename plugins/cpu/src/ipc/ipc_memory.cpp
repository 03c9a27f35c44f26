#include "ipc_memory.hpp"

#include "../address_space.hpp"
#include "../checker/checker.hpp"

#include <cstring>
#include <new>

#include <unistd.h>

namespace keel::cpu::ipc {

std::pair<std::uint32_t, std::int32_t> open_imports(const AllocationHeader& h) noexcept {
    std::uint32_t open = 0;
    std::int32_t some = 0;
    for (const auto& slot : h.importers) {
        const std::int32_t pid = slot.load(std::memory_order_acquire);
        if (pid != 0 && process_alive(pid)) {
            ++open;
            some = pid;
        }
    }
    return {open, some};
}

IpcMemory::~IpcMemory() = default;

Result<keel_device_addr> IpcMemory::adopt(Entry entry, std::uint64_t data_offset) {
    KEEL_TRY_ASSIGN(Mapping data, map_shared(entry.file.get(), data_offset, round_to_pages(entry.size)));
    const std::uint64_t mapped = data.bytes();
    KEEL_TRY_ASSIGN(AllocationInfo a, memory_.adopt_shared(HostBlock::adopt_mapping(data.release(), entry.size, mapped),
                                                          entry.size, entry.id));
    AllocationHeader& h = entry.header();
    if (checker_ != nullptr) {
        if (entry.role == Role::exported) checker_->ipc_exported(a.id, &h);
        else checker_->ipc_imported(a.id, a.base, &h);
    }
    std::lock_guard lock(mutex_);
    entries_.emplace(a.base, std::move(entry));
    live_.fetch_add(1, std::memory_order_relaxed);
    return a.base;
}

Result<keel_device_addr> IpcMemory::allocate(std::uint64_t size, std::uint64_t id) {
    if (size == 0) return Error(KEEL_STATUS_INVALID_ARGUMENT, "size is 0");
    if (size > kMaxAllocation)
        return Error(KEEL_STATUS_OUT_OF_MEMORY, std::to_string(size) + " bytes exceed the largest allocation (" +
                                                    std::to_string(kMaxAllocation) + " bytes)");
    if (round_to_pages(size) > memory_.total_bytes() - memory_.used_bytes())
        return Error(KEEL_STATUS_OUT_OF_MEMORY, "cannot allocate " + std::to_string(size) +
                                                    " exportable bytes: " +
                                                    std::to_string(memory_.total_bytes() - memory_.used_bytes()) +
                                                    " bytes free");
    Entry e;
    e.role = Role::exported;
    e.id = id;
    e.size = size;
    KEEL_TRY_ASSIGN(e.file, create_shared_file("keel-cpu-exportable", page_size() + round_to_pages(size)));
    KEEL_TRY_ASSIGN(e.header_page, map_shared(e.file.get(), 0, page_size()));
    auto* h = new (e.header_page.get()) AllocationHeader;
    h->magic = AllocationHeader::kMagic;
    h->uid = random_uid();
    h->size = size;
    h->exporter_pid = static_cast<std::int32_t>(::getpid());
    return adopt(std::move(e), page_size());
}

Result<void> IpcMemory::export_handle(keel_device_addr addr, keel_ipc_handle* out) {
    if (out == nullptr) return Error(KEEL_STATUS_INVALID_ARGUMENT, "out is null");
    if (out->struct_size < KEEL_IPC_HANDLE_STRUCT_SIZE)
        return Error(KEEL_STATUS_INVALID_ARGUMENT, "out->struct_size " + std::to_string(out->struct_size) +
                                                       " is smaller than keel_ipc_handle of 1.6 (" +
                                                       std::to_string(KEEL_IPC_HANDLE_STRUCT_SIZE) + ")");
    std::lock_guard lock(mutex_);
    auto it = entries_.find(addr);
    if (it == entries_.end() || it->second.role != Role::exported)
        return Error(KEEL_STATUS_INVALID_ARGUMENT,
                     hex(addr) + (it == entries_.end() ? " is not the base of an allocation of ipc_memory_alloc"
                                                        : " is imported memory: only its exporter exports it"));
    const Entry& e = it->second;
    KEEL_TRY_ASSIGN(Fd copy, duplicate(e.file.get()));
    if (checker_ != nullptr) checker_->ipc_before_export(e.id);
    HandleBytes b;
    b.kind = KEEL_IPC_HANDLE_MEMORY;
    b.exporter_pid = e.header().exporter_pid;
    b.uid = e.header().uid;
    b.size = e.size;
    out->kind = KEEL_IPC_HANDLE_MEMORY;
    out->fd = copy.release();
    out->size = e.size;
    out->byte_count = sizeof b;
    out->reserved = 0;
    std::memset(out->bytes, 0, sizeof out->bytes);
    std::memcpy(out->bytes, &b, sizeof b);
    return ok();
}

namespace {

Result<HandleBytes> read_handle(const keel_ipc_handle& handle, keel_ipc_handle_kind kind) {
    const char* what = kind == KEEL_IPC_HANDLE_MEMORY ? "memory" : "event";
    if (handle.struct_size < KEEL_IPC_HANDLE_STRUCT_SIZE)
        return Error(KEEL_STATUS_INVALID_ARGUMENT, "handle->struct_size " + std::to_string(handle.struct_size) +
                                                       " is smaller than keel_ipc_handle of 1.6");
    if (handle.kind != kind)
        return Error(KEEL_STATUS_INVALID_ARGUMENT, "the handle is of kind " + std::to_string(handle.kind) +
                                                       ", not an exported " + what);
    HandleBytes b;
    if (handle.byte_count != sizeof b)
        return Error(KEEL_STATUS_INVALID_ARGUMENT, "the handle is not the cpu plugin's (" +
                                                       std::to_string(handle.byte_count) + " bytes)");
    std::memcpy(&b, handle.bytes, sizeof b);
    if (b.tag != HandleBytes::kTag || b.kind != static_cast<std::uint32_t>(kind))
        return Error(KEEL_STATUS_INVALID_ARGUMENT, "the handle is not the cpu plugin's (unknown tag)");
    if (handle.fd < 0)
        return Error(KEEL_STATUS_INVALID_ARGUMENT, std::string("the ") + what +
                                                       " handle has no descriptor (fd -1): receive it with "
                                                       "SCM_RIGHTS, as keel::ipc::receive_handle does");
    return b;
}

}  // namespace

Result<HandleBytes> read_event_handle(const keel_ipc_handle& handle) {
    return read_handle(handle, KEEL_IPC_HANDLE_EVENT);
}

Result<keel_device_addr> IpcMemory::import(const keel_ipc_handle& handle, std::uint64_t id) {
    KEEL_TRY_ASSIGN(HandleBytes b, read_handle(handle, KEEL_IPC_HANDLE_MEMORY));
    KEEL_TRY_ASSIGN(std::uint64_t file_size, shared_file_size(handle.fd));
    if (b.size == 0 || handle.size != b.size || file_size != page_size() + round_to_pages(b.size))
        return Error(KEEL_STATUS_INVALID_ARGUMENT, "the handle's descriptor " + std::to_string(handle.fd) +
                                                       " is not the shared file of the allocation it names (" +
                                                       std::to_string(file_size) + " bytes for an allocation of " +
                                                       std::to_string(b.size) + ")");
    Entry e;
    e.role = Role::imported;
    e.id = id;
    e.size = b.size;
    KEEL_TRY_ASSIGN(e.file, duplicate(handle.fd));
    KEEL_TRY_ASSIGN(e.header_page, map_shared(e.file.get(), 0, page_size()));
    AllocationHeader& h = e.header();
    if (h.magic != AllocationHeader::kMagic || h.uid != b.uid || h.size != b.size)
        return Error(KEEL_STATUS_INVALID_ARGUMENT, "the handle's descriptor does not hold the allocation it names");
    const auto pid = static_cast<std::int32_t>(::getpid());
    for (std::uint32_t i = 0; i < kMaxImporters && e.importer_slot < 0; ++i) {
        std::int32_t expected = 0;
        if (h.importers[i].compare_exchange_strong(expected, pid, std::memory_order_acq_rel))
            e.importer_slot = static_cast<std::int32_t>(i);
    }
    if (e.importer_slot < 0)
        return Error(KEEL_STATUS_OUT_OF_MEMORY, "allocation has " + std::to_string(kMaxImporters) +
                                                    " open imports already (close some first)");
    const std::int32_t slot = e.importer_slot;
    AllocationHeader* header = &h;
    auto adopted = adopt(std::move(e), page_size());
    if (!adopted.ok()) header->importers[slot].store(0, std::memory_order_release);
    return adopted;
}

Result<void> IpcMemory::close(keel_device_addr addr) {
    {
        std::lock_guard lock(mutex_);
        auto it = entries_.find(addr);
        if (it == entries_.end() || it->second.role != Role::imported)
            return Error(KEEL_STATUS_INVALID_ARGUMENT,
                         hex(addr) + (it == entries_.end() ? " is not an address from ipc_memory_import"
                                                            : " is exported memory: free it with device_free"));
    }
    // As device_free: with the checker, a close while this process's own
    // work still uses the memory is refused (and the memory stays open).
    const auto free_slot = [&]() -> Result<void> {
        KEEL_TRY(memory_.free(addr));
        return ok();
    };
    if (checker_ != nullptr) KEEL_TRY(checker_->free_device(addr, free_slot));
    else KEEL_TRY(free_slot());
    Entry e;
    {
        std::lock_guard lock(mutex_);
        auto it = entries_.find(addr);
        if (it == entries_.end()) return ok();  // closed concurrently: the slot free above would have failed
        e = std::move(it->second);
        entries_.erase(it);
        live_.fetch_sub(1, std::memory_order_relaxed);
    }
    if (checker_ != nullptr) checker_->ipc_forget(e.id, addr, true);
    e.header().importers[e.importer_slot].store(0, std::memory_order_release);
    return ok();
}

std::optional<Result<void>> IpcMemory::check_free(keel_device_addr addr) {
    if (live_.load(std::memory_order_relaxed) == 0) return std::nullopt;
    std::lock_guard lock(mutex_);
    auto it = entries_.find(addr);
    if (it == entries_.end()) return std::nullopt;
    const Entry& e = it->second;
    if (e.role == Role::imported)
        return Result<void>(Error(KEEL_STATUS_INVALID_ARGUMENT,
                                  hex(addr) + " is imported memory: close it with ipc_memory_close"));
    if (checker_ != nullptr) {
        const auto [open, pid] = open_imports(e.header());
        if (open > 0) return checker_->ipc_free_exported(e.id, addr, e.size, open, pid);
    }
    return Result<void>(ok());
}

void IpcMemory::forget_freed(keel_device_addr addr) {
    if (live_.load(std::memory_order_relaxed) == 0) return;
    Entry owned;
    {
        std::lock_guard lock(mutex_);
        auto it = entries_.find(addr);
        if (it == entries_.end()) return;
        owned = std::move(it->second);
        entries_.erase(it);
        live_.fetch_sub(1, std::memory_order_relaxed);
    }
    if (checker_ != nullptr) checker_->ipc_forget(owned.id, addr, false);
    owned.header().exporter_freed.store(1, std::memory_order_release);
}

}  // namespace keel::cpu::ipc
