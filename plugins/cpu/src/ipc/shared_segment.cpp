#include "shared_segment.hpp"

#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <linux/futex.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace keel::cpu::ipc {

Fd& Fd::operator=(Fd&& o) noexcept {
    if (this != &o) {
        if (fd_ >= 0) ::close(fd_);
        fd_ = std::exchange(o.fd_, -1);
    }
    return *this;
}

Fd::~Fd() {
    if (fd_ >= 0) ::close(fd_);
}

Mapping& Mapping::operator=(Mapping&& o) noexcept {
    if (this != &o) {
        if (p_ != nullptr) ::munmap(p_, bytes_);
        p_ = std::exchange(o.p_, nullptr);
        bytes_ = std::exchange(o.bytes_, 0);
    }
    return *this;
}

Mapping::~Mapping() {
    if (p_ != nullptr) ::munmap(p_, bytes_);
}

std::size_t page_size() noexcept {
    static const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    return page;
}

std::uint64_t round_to_pages(std::uint64_t bytes) noexcept {
    const std::uint64_t page = page_size();
    return (bytes + page - 1) / page * page;
}

namespace {
Error os_error(const std::string& what) {
    const int e = errno;
    const Status code = (e == ENOMEM || e == ENOSPC || e == EMFILE || e == ENFILE) ? KEEL_STATUS_OUT_OF_MEMORY
                        : (e == EBADF || e == EINVAL)                           ? KEEL_STATUS_INVALID_ARGUMENT
                                                                                 : KEEL_STATUS_INTERNAL;
    return Error(code, what + ": " + std::strerror(e));
}
}  // namespace

Result<Fd> create_shared_file(const char* name, std::uint64_t bytes) {
    Fd fd(static_cast<int>(::syscall(SYS_memfd_create, name, MFD_CLOEXEC)));
    if (!fd) return os_error("memfd_create");
    if (::ftruncate(fd.get(), static_cast<off_t>(bytes)) != 0)
        return os_error("ftruncate of a shared file to " + std::to_string(bytes) + " bytes");
    return fd;
}

Result<Fd> duplicate(int fd) {
    Fd copy(::fcntl(fd, F_DUPFD_CLOEXEC, 0));
    if (!copy) return os_error("descriptor " + std::to_string(fd));
    return copy;
}

Result<std::uint64_t> shared_file_size(int fd) {
    struct stat st {};
    if (::fstat(fd, &st) != 0) return os_error("descriptor " + std::to_string(fd));
    if (!S_ISREG(st.st_mode))
        return Error(KEEL_STATUS_INVALID_ARGUMENT, "descriptor " + std::to_string(fd) + " is not a shared memory file");
    return static_cast<std::uint64_t>(st.st_size);
}

Result<Mapping> map_shared(int fd, std::uint64_t offset, std::uint64_t bytes) {
    void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, static_cast<off_t>(offset));
    if (p == MAP_FAILED) return os_error("mapping " + std::to_string(bytes) + " shared bytes");
    return Mapping(static_cast<std::byte*>(p), bytes);
}

bool process_alive(std::int32_t pid) noexcept {
    if (pid <= 0) return false;
    return ::kill(pid, 0) == 0 || errno != ESRCH;
}

std::uint64_t random_uid() {
    // From the kernel: no per-thread generator state in a dlopen'ed plugin.
    std::uint64_t v = 0;
    while (v == 0)
        if (::getrandom(&v, sizeof v, 0) != static_cast<ssize_t>(sizeof v)) v = 0;
    return v;
}

void shared_futex_wait_for(std::atomic<std::uint32_t>& word, std::uint32_t expected,
                           std::uint64_t timeout_ns) noexcept {
    timespec ts{};
    ts.tv_sec = static_cast<time_t>(timeout_ns / 1'000'000'000);
    ts.tv_nsec = static_cast<long>(timeout_ns % 1'000'000'000);
    ::syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), FUTEX_WAIT, expected, &ts, nullptr, 0);
}

void shared_futex_wake_all(std::atomic<std::uint32_t>& word) noexcept {
    ::syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), FUTEX_WAKE, INT32_MAX, nullptr, nullptr, 0);
}

}  // namespace keel::cpu::ipc
