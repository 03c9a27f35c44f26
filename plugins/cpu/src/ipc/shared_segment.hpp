// Memory shared between processes: a memfd, mapped, whose descriptor travels
// to other processes (SCM_RIGHTS) and keeps the pages alive while anyone
// holds it or a mapping of it. The layouts placed in such segments (the
// header of an exportable allocation, the state of an interprocess event)
// hold only address-free lock-free atomics and plain data, so that the
// processes of one machine may share them.
//
// Thread-safety: a Segment is a move-only owner (Send, not Sync); what lives
// inside it is shared by design and synchronised through its atomics.
#pragma once

#include <keel/result.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

namespace keel::cpu::ipc {

// One owned descriptor (closed on destruction). Move-only.
class Fd {
public:
    Fd() = default;
    explicit Fd(int fd) noexcept : fd_(fd) {}
    Fd(const Fd&) = delete;
    Fd& operator=(const Fd&) = delete;
    Fd(Fd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
    Fd& operator=(Fd&& o) noexcept;
    ~Fd();
    [[nodiscard]] int get() const noexcept { return fd_; }
    [[nodiscard]] int release() noexcept { return std::exchange(fd_, -1); }
    explicit operator bool() const noexcept { return fd_ >= 0; }

private:
    int fd_ = -1;
};

// One owned mapping (unmapped on destruction). Move-only.
class Mapping {
public:
    Mapping() = default;
    Mapping(std::byte* p, std::size_t bytes) noexcept : p_(p), bytes_(bytes) {}
    Mapping(const Mapping&) = delete;
    Mapping& operator=(const Mapping&) = delete;
    Mapping(Mapping&& o) noexcept : p_(std::exchange(o.p_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
    Mapping& operator=(Mapping&& o) noexcept;
    ~Mapping();
    [[nodiscard]] std::byte* get() const noexcept { return p_; }
    [[nodiscard]] std::size_t bytes() const noexcept { return bytes_; }
    // Gives up ownership (the caller unmaps `bytes()` at get()).
    std::byte* release() noexcept {
        bytes_ = 0;
        return std::exchange(p_, nullptr);
    }

private:
    std::byte* p_ = nullptr;
    std::size_t bytes_ = 0;
};

[[nodiscard]] std::size_t page_size() noexcept;
[[nodiscard]] std::uint64_t round_to_pages(std::uint64_t bytes) noexcept;

// A new anonymous shared file of `bytes` (zero-filled). `name` shows in /proc.
[[nodiscard]] Result<Fd> create_shared_file(const char* name, std::uint64_t bytes);
// A private copy of `fd` (the caller's stays the caller's).
[[nodiscard]] Result<Fd> duplicate(int fd);
// Size of the file behind `fd`; INVALID_ARGUMENT when it is not one.
[[nodiscard]] Result<std::uint64_t> shared_file_size(int fd);
// Maps [offset, offset + bytes) of `fd` read-write and shared.
[[nodiscard]] Result<Mapping> map_shared(int fd, std::uint64_t offset, std::uint64_t bytes);

// Whether process `pid` still exists (false only when it is known gone).
[[nodiscard]] bool process_alive(std::int32_t pid) noexcept;
// A random 64-bit name (allocation and event identities across processes).
[[nodiscard]] std::uint64_t random_uid();

// Futex wait/wake on a word other processes share (not FUTEX_PRIVATE).
void shared_futex_wait_for(std::atomic<std::uint32_t>& word, std::uint32_t expected,
                           std::uint64_t timeout_ns) noexcept;
void shared_futex_wake_all(std::atomic<std::uint32_t>& word) noexcept;

static_assert(std::atomic<std::uint32_t>::is_always_lock_free && std::atomic<std::uint64_t>::is_always_lock_free &&
                  std::atomic<std::int32_t>::is_always_lock_free,
              "shared segments need address-free (lock-free) atomics");

}  // namespace keel::cpu::ipc
