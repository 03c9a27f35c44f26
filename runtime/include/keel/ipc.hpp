// Device memory and events shared between processes (keel.h 1.6): a
// process exports an allocation or an event as an ipc::Handle, sends it to
// another process over a Unix socket (send_handle / receive_handle), and
// that process imports it on a device of the same plugin.
//
//   exporter                                   importer
//   auto mem = ipc::allocate_exportable(dev, n);
//   auto ev  = ipc::create_event(dev);
//   stream.copy(*mem, bytes); ev->record(stream);
//   ipc::send_handle(sock, *ipc::export_memory(*mem));
//   ipc::send_handle(sock, *ipc::export_event(*ev));
//                                              auto mh = ipc::receive_handle(sock);
//                                              auto eh = ipc::receive_handle(sock);
//                                              auto buf = ipc::import_memory(dev, *mh);
//                                              auto ev = ipc::import_event(dev, *eh);
//                                              stream.wait(*ev);  // orders after the exporter's writes
//                                              stream.copy_to_vector<float>(buf->view());
//
// Lifetime (keel.h [ipc.memory-lifetime]): an ImportedBuffer's memory stays
// valid until it is closed, also after the exporter freed it or exited;
// the exporter must not free (or reuse) what it shared before every
// importer closed it. Ordering ([ipc.memory-ordering]): only the shared
// event orders the exporter's writes before the importer's reads.
//
// Every call returns UNIMPLEMENTED on a device without the capability
// (DeviceCapability::ipc_memory / ipc_events) or a plugin older than 1.6.
#pragma once

#include <keel/device.hpp>
#include <keel/event.hpp>
#include <keel/export.hpp>
#include <keel/keel.h>
#include <keel/raw_buffer.hpp>
#include <keel/result.hpp>

#include <chrono>
#include <cstdint>
#include <span>

namespace keel::ipc {

// An exported allocation or event on its way to another process: the
// plugin's opaque bytes and, where the platform shares through one, a file
// descriptor that this Handle owns (closed when it goes).
//
// Move-only. Send, not Sync.
class KEEL_API Handle {
public:
    Handle() noexcept;
    Handle(const Handle&) = delete;
    Handle& operator=(const Handle&) = delete;
    Handle(Handle&& other) noexcept;
    Handle& operator=(Handle&& other) noexcept;
    ~Handle();

    // Takes over `handle`, its descriptor included.
    [[nodiscard]] static Handle adopt(const keel_ipc_handle& handle) noexcept;

    [[nodiscard]] keel_ipc_handle_kind kind() const noexcept { return c_.kind; }
    // Bytes of the exported allocation (memory), 0 for an event.
    [[nodiscard]] std::uint64_t size() const noexcept { return c_.size; }
    // The descriptor (still owned by this Handle), -1 for none.
    [[nodiscard]] int fd() const noexcept { return c_.fd; }
    [[nodiscard]] std::span<const std::uint8_t> bytes() const noexcept { return {c_.bytes, c_.byte_count}; }
    [[nodiscard]] bool empty() const noexcept { return c_.kind == KEEL_IPC_HANDLE_NONE; }
    // As the C ABI takes it (the descriptor stays this Handle's).
    [[nodiscard]] const keel_ipc_handle& c_handle() const noexcept { return c_; }

private:
    keel_ipc_handle c_;
};

// `size` > 0 bytes of `device` that export_memory can export (freed as any
// RawBuffer; see the lifetime rule above).
[[nodiscard]] KEEL_API Result<RawBuffer> allocate_exportable(const Device& device, std::uint64_t size);
// A new handle of `buffer`, which must come from allocate_exportable.
[[nodiscard]] KEEL_API Result<Handle> export_memory(const RawBuffer& buffer);

// Another process's allocation, opened in this one. Closed (ipc_memory_close)
// when it goes; as with RawBuffer, the caller makes sure no enqueued work
// still uses it by then. Move-only; Send, not Sync.
class KEEL_API ImportedBuffer {
public:
    ImportedBuffer(const ImportedBuffer&) = delete;
    ImportedBuffer& operator=(const ImportedBuffer&) = delete;
    ImportedBuffer(ImportedBuffer&& other) noexcept;
    ImportedBuffer& operator=(ImportedBuffer&& other) noexcept;
    ~ImportedBuffer();

    [[nodiscard]] const Device& device() const noexcept { return device_; }
    [[nodiscard]] keel_device_addr address() const noexcept { return address_; }
    [[nodiscard]] std::uint64_t size() const noexcept { return size_; }
    [[nodiscard]] bool empty() const noexcept { return address_ == 0; }
    // The whole allocation (an empty view once closed).
    [[nodiscard]] DeviceView view() const noexcept;
    operator DeviceView() const noexcept { return view(); }  // NOLINT: usable as its view
    [[nodiscard]] Result<DeviceView> view(std::uint64_t offset, std::uint64_t size) const;

    // Closes now and returns the plugin's error; empty afterwards either way.
    [[nodiscard]] Result<void> close();

private:
    friend KEEL_API Result<ImportedBuffer> import_memory(const Device& device, const Handle& handle);
    ImportedBuffer(Device device, keel_device_addr address, std::uint64_t size) noexcept
        : device_(std::move(device)), address_(address), size_(size) {}

    Device device_;
    keel_device_addr address_ = 0;
    std::uint64_t size_ = 0;
};

// Opens a memory handle of another process on `device` (same plugin).
[[nodiscard]] KEEL_API Result<ImportedBuffer> import_memory(const Device& device, const Handle& handle);

// An event that can be exported (KEEL_EVENT_INTERPROCESS; no timing).
[[nodiscard]] KEEL_API Result<Event> create_event(const Device& device);
// A new handle of `event`, which must come from ipc::create_event.
[[nodiscard]] KEEL_API Result<Handle> export_event(const Event& event);
// Opens an event handle of another process: wait for it with Stream::wait,
// query() or synchronize(); only the exporter records it.
[[nodiscard]] KEEL_API Result<Event> import_event(const Device& device, const Handle& handle);

// Sends `handle` over a connected Unix socket (its descriptor with
// SCM_RIGHTS); the Handle stays the caller's.
[[nodiscard]] KEEL_API Result<void> send_handle(int socket, const Handle& handle);
// Receives one handle send_handle sent; UNAVAILABLE when nothing arrives
// within `timeout` or the peer closed the socket.
[[nodiscard]] KEEL_API Result<Handle> receive_handle(int socket,
                                                     std::chrono::milliseconds timeout = std::chrono::seconds(30));

}  // namespace keel::ipc
