// Checks a shared-library file before it is handed to the system loader.
//
// The system loader maps a library's segments as its headers describe them;
// a segment that lies past the end of a truncated file is mapped anyway, and
// the first touch of it kills the process with SIGBUS (no message, no way to
// recover). So every file keel loads is read here first: ELF identity, the
// class, byte order and machine of this process, a shared object, and every
// program header, segment, section header and section within the file's size.
// A file that fails is rejected with a message that names it and says what
// is wrong; no file content can crash the check (it reads with pread into
// its own buffers and checks every offset for overflow).
//
// What it cannot see: the file changing between the check and the load, and
// the libraries the file itself depends on (the system loader finds those).
//
// Thread-safety: reentrant; touches nothing but the file.
#pragma once

#include <keel/result.hpp>

#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace keel::base {

namespace elf_detail {

// The ELF machine of this process's code; 0 when not known here (not checked).
constexpr std::uint16_t host_machine() noexcept {
#if defined(__x86_64__)
    return EM_X86_64;
#elif defined(__i386__)
    return EM_386;
#elif defined(__aarch64__)
    return EM_AARCH64;
#elif defined(__arm__)
    return EM_ARM;
#elif defined(__riscv)
    return EM_RISCV;
#elif defined(__powerpc64__)
    return EM_PPC64;
#elif defined(__s390x__)
    return EM_S390;
#else
    return 0;
#endif
}

inline std::string_view class_name(unsigned char c) noexcept {
    switch (c) {
        case ELFCLASS32: return "32-bit";
        case ELFCLASS64: return "64-bit";
        default: return "unknown-class";
    }
}

inline std::string machine_name(std::uint16_t m) {
    switch (m) {
        case EM_X86_64: return "x86-64";
        case EM_386: return "i386";
        case EM_AARCH64: return "AArch64";
        case EM_ARM: return "ARM";
        case EM_RISCV: return "RISC-V";
        case EM_PPC64: return "PowerPC64";
        case EM_PPC: return "PowerPC";
        case EM_S390: return "s390";
        default: return "machine " + std::to_string(m);
    }
}

// Closes the descriptor it owns. Move-only in spirit; never copied here.
struct Fd {
    int fd = -1;
    explicit Fd(int f) noexcept : fd(f) {}
    Fd(const Fd&) = delete;
    Fd& operator=(const Fd&) = delete;
    ~Fd() {
        if (fd >= 0) ::close(fd);
    }
};

// Reads exactly `size` bytes at `offset`; false on a short read or an error.
inline bool read_at(int fd, void* out, std::size_t size, std::uint64_t offset) noexcept {
    auto* p = static_cast<unsigned char*>(out);
    while (size > 0) {
        const ssize_t n = ::pread(fd, p, size, static_cast<off_t>(offset));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        p += n;
        size -= static_cast<std::size_t>(n);
        offset += static_cast<std::uint64_t>(n);
    }
    return true;
}

// [offset, offset + size) lies inside a file of `file_size` bytes (no overflow).
constexpr bool within(std::uint64_t offset, std::uint64_t size, std::uint64_t file_size) noexcept {
    return offset <= file_size && size <= file_size - offset;
}

}  // namespace elf_detail

// OK when `path` is a regular file holding an ELF shared object of this
// process's class, byte order and machine whose headers, segments and
// sections all lie within the file. Otherwise INVALID_ARGUMENT (the file is
// bad), NOT_FOUND (no such file) or UNAVAILABLE (it cannot be opened), the message
// naming `path` and the first problem found.
[[nodiscard]] inline Result<void> check_shared_library_file(const std::string& path) {
    using namespace elf_detail;
    using Ehdr = ElfW(Ehdr);
    using Phdr = ElfW(Phdr);
    using Shdr = ElfW(Shdr);
    const auto bad = [&](const std::string& what) {
        return Error(KEEL_STATUS_INVALID_ARGUMENT, path + " is not a loadable shared library: " + what);
    };

    // O_NONBLOCK: opening a FIFO placed where a library is expected must not hang.
    Fd file(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
    if (file.fd < 0) {
        const int err = errno;
        return Error(err == ENOENT ? KEEL_STATUS_NOT_FOUND : KEEL_STATUS_UNAVAILABLE,
                     "cannot open " + path + ": " + std::strerror(err));
    }
    struct stat st {};
    if (::fstat(file.fd, &st) != 0) return bad(std::string("cannot stat: ") + std::strerror(errno));
    if (!S_ISREG(st.st_mode)) return bad("not a regular file");
    const auto size = static_cast<std::uint64_t>(st.st_size);
    const std::string has = " (the file has " + std::to_string(size) + " bytes)";
    if (size == 0) return bad("the file is empty");

    unsigned char ident[EI_NIDENT] = {};
    if (size < EI_NIDENT || !read_at(file.fd, ident, EI_NIDENT, 0) || std::memcmp(ident, ELFMAG, SELFMAG) != 0)
        return bad("not an ELF file (no \\x7fELF magic at its start)" + has);
    if (ident[EI_CLASS] != (sizeof(void*) == 8 ? ELFCLASS64 : ELFCLASS32))
        return bad("ELF class " + std::string(class_name(ident[EI_CLASS])) + ", this process is " +
                   std::string(class_name(sizeof(void*) == 8 ? ELFCLASS64 : ELFCLASS32)));
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    constexpr unsigned char kData = ELFDATA2LSB;
#else
    constexpr unsigned char kData = ELFDATA2MSB;
#endif
    if (ident[EI_DATA] != kData) return bad("byte order differs from this process's");
    if (ident[EI_VERSION] != EV_CURRENT) return bad("unknown ELF version " + std::to_string(ident[EI_VERSION]));

    Ehdr eh{};
    if (size < sizeof(Ehdr) || !read_at(file.fd, &eh, sizeof eh, 0))
        return bad("truncated inside the ELF header" + has);
    if (eh.e_type != ET_DYN)
        return bad(eh.e_type == ET_EXEC ? "an executable, not a shared object"
                   : eh.e_type == ET_REL ? "an object file (.o), not a shared object"
                                         : "ELF type " + std::to_string(eh.e_type) + ", not a shared object");
    if (host_machine() != 0 && eh.e_machine != host_machine())
        return bad("built for " + machine_name(eh.e_machine) + ", this process is " +
                   machine_name(host_machine()));

    // Program headers: the loader maps every PT_LOAD segment from the file.
    if (eh.e_phnum == 0 || eh.e_phnum == PN_XNUM) return bad("no usable program headers");
    if (eh.e_phentsize != sizeof(Phdr))
        return bad("program header size " + std::to_string(eh.e_phentsize) + ", expected " +
                   std::to_string(sizeof(Phdr)));
    const std::uint64_t ph_bytes = std::uint64_t{eh.e_phnum} * sizeof(Phdr);
    if (!within(eh.e_phoff, ph_bytes, size))
        return bad("truncated: the program header table ends at byte " + std::to_string(eh.e_phoff + ph_bytes) + has);
    std::vector<Phdr> ph(eh.e_phnum);
    if (!read_at(file.fd, ph.data(), ph_bytes, eh.e_phoff)) return bad("cannot read the program headers");
    bool loads = false;
    for (std::size_t i = 0; i < ph.size(); ++i) {
        const Phdr& p = ph[i];
        if (p.p_type == PT_LOAD) {
            loads = true;
            if (p.p_filesz > p.p_memsz)
                return bad("segment " + std::to_string(i) + " holds more file bytes than memory");
        }
        if (!within(p.p_offset, p.p_filesz, size))
            return bad("truncated: segment " + std::to_string(i) + " ends at byte " +
                       std::to_string(p.p_offset + p.p_filesz) + has);
    }
    if (!loads) return bad("no loadable segment");

    // Section headers: not needed to map the file, but what dlsym, debuggers
    // and keel-cts read; a table or section past the end means a cut file.
    if (eh.e_shoff != 0 || eh.e_shnum != 0) {
        if (eh.e_shnum == 0) return bad("extended section numbering is not supported");
        if (eh.e_shentsize != sizeof(Shdr))
            return bad("section header size " + std::to_string(eh.e_shentsize) + ", expected " +
                       std::to_string(sizeof(Shdr)));
        const std::uint64_t sh_bytes = std::uint64_t{eh.e_shnum} * sizeof(Shdr);
        if (!within(eh.e_shoff, sh_bytes, size))
            return bad("truncated: the section header table ends at byte " +
                       std::to_string(eh.e_shoff + sh_bytes) + has);
        std::vector<Shdr> sh(eh.e_shnum);
        if (!read_at(file.fd, sh.data(), sh_bytes, eh.e_shoff)) return bad("cannot read the section headers");
        for (std::size_t i = 0; i < sh.size(); ++i) {
            const Shdr& s = sh[i];
            if (s.sh_type == SHT_NOBITS || s.sh_type == SHT_NULL) continue;
            if (!within(s.sh_offset, s.sh_size, size))
                return bad("truncated: section " + std::to_string(i) + " ends at byte " +
                           std::to_string(s.sh_offset + s.sh_size) + has);
        }
        if (eh.e_shstrndx != SHN_UNDEF && eh.e_shstrndx >= eh.e_shnum)
            return bad("the section name table index is out of range");
    }
    return ok();
}

// A library named without a '/' is found by the system loader in the system's
// directories (its search path); only a path can be checked beforehand.
[[nodiscard]] inline bool names_a_path(std::string_view library) noexcept {
    return library.find('/') != std::string_view::npos;
}

}  // namespace keel::base
