#include "elf_exports.hpp"

#include <elf.h>

#include <cstring>
#include <fstream>
#include <iterator>

namespace keel::cts {

namespace {

struct Elf32Types {
    using Ehdr = Elf32_Ehdr;
    using Shdr = Elf32_Shdr;
    using Sym = Elf32_Sym;
    static unsigned bind(unsigned char info) { return ELF32_ST_BIND(info); }
    static unsigned visibility(unsigned char other) { return ELF32_ST_VISIBILITY(other); }
};
struct Elf64Types {
    using Ehdr = Elf64_Ehdr;
    using Shdr = Elf64_Shdr;
    using Sym = Elf64_Sym;
    static unsigned bind(unsigned char info) { return ELF64_ST_BIND(info); }
    static unsigned visibility(unsigned char other) { return ELF64_ST_VISIBILITY(other); }
};

Error malformed(const std::filesystem::path& file, const std::string& what) {
    return Error(KEEL_STATUS_INVALID_ARGUMENT,
                 "[keel-cts] " + file.string() + " is not a well-formed ELF object: " + what);
}

// A T read from [offset, offset + sizeof(T)) of `bytes`, if it fits.
template <class T>
bool read_at(const std::string& bytes, std::uint64_t offset, T& out) {
    if (offset > bytes.size() || bytes.size() - offset < sizeof(T)) return false;
    std::memcpy(&out, bytes.data() + offset, sizeof(T));
    return true;
}

template <class E>
Result<std::vector<std::string>> dynamic_symbols(const std::filesystem::path& file,
                                                 const std::string& bytes) {
    typename E::Ehdr header{};
    if (!read_at(bytes, 0, header)) return malformed(file, "truncated header");
    if (header.e_shentsize != sizeof(typename E::Shdr)) return malformed(file, "odd section header size");
    auto section = [&](std::uint64_t index, typename E::Shdr& out) {
        return index < header.e_shnum &&
               read_at(bytes, header.e_shoff + index * sizeof(typename E::Shdr), out);
    };
    for (std::uint64_t i = 0; i < header.e_shnum; ++i) {
        typename E::Shdr dynsym{};
        if (!section(i, dynsym)) return malformed(file, "truncated section headers");
        if (dynsym.sh_type != SHT_DYNSYM) continue;
        typename E::Shdr strtab{};
        if (!section(dynsym.sh_link, strtab)) return malformed(file, "bad .dynstr link");
        if (dynsym.sh_entsize != sizeof(typename E::Sym)) return malformed(file, "odd symbol size");
        std::vector<std::string> names;
        const std::uint64_t count = dynsym.sh_size / sizeof(typename E::Sym);
        for (std::uint64_t s = 1; s < count; ++s) {  // entry 0 is the null symbol
            typename E::Sym sym{};
            if (!read_at(bytes, dynsym.sh_offset + s * sizeof(sym), sym))
                return malformed(file, "truncated .dynsym");
            const unsigned bind = E::bind(sym.st_info);
            const bool global = bind == STB_GLOBAL || bind == STB_WEAK || bind == STB_GNU_UNIQUE;
            const bool visible = E::visibility(sym.st_other) == STV_DEFAULT ||
                                 E::visibility(sym.st_other) == STV_PROTECTED;
            if (!global || !visible || sym.st_shndx == SHN_UNDEF || sym.st_shndx == SHN_ABS) continue;
            const std::uint64_t at = strtab.sh_offset + sym.st_name;
            if (sym.st_name >= strtab.sh_size || at >= bytes.size())
                return malformed(file, "symbol name outside .dynstr");
            names.emplace_back(bytes.c_str() + at, strnlen(bytes.data() + at, bytes.size() - at));
        }
        return names;
    }
    return malformed(file, "no dynamic symbol table");
}

}  // namespace

Result<std::vector<std::string>> exported_symbols(const std::filesystem::path& file) {
    std::ifstream in(file, std::ios::binary);
    if (!in) return Error(KEEL_STATUS_NOT_FOUND, "[keel-cts] cannot read " + file.string());
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (bytes.size() < EI_NIDENT || std::memcmp(bytes.data(), ELFMAG, SELFMAG) != 0)
        return malformed(file, "no ELF magic");
    switch (bytes[EI_CLASS]) {
        case ELFCLASS32: return dynamic_symbols<Elf32Types>(file, bytes);
        case ELFCLASS64: return dynamic_symbols<Elf64Types>(file, bytes);
        default: return malformed(file, "unknown ELF class");
    }
}

}  // namespace keel::cts
