// Corrupt library files on every path keel loads one from: a plugin
// directory, KEEL_PLUGIN_PATH, a plugin file opened directly (what the
// CUDA and Level Zero tests and benchmarks do with KEEL_CUDA_PLUGIN) and
// the Level Zero plugin's KEEL_LEVEL_ZERO_LOADER. The system loader maps a
// truncated file's segments anyway and the process dies of SIGBUS; each
// file must instead be refused with a message naming it and what is wrong.
#include "test_support.hpp"

#include <keel/base/elf_check.hpp>
#include <keel/testing/loaded_plugin.hpp>
#include <keel/testing/result.hpp>

#include <elf.h>
#include <sys/stat.h>

#include <cstddef>
#include <cstring>
#include <iterator>
#include <random>

namespace keel::test {
namespace {

struct Corruption {
    std::string name;
    std::string reason;  // part of the message
};

std::vector<char> read_all(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return std::vector<char>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void write_all(const fs::path& p, const std::vector<char>& bytes) {
    std::ofstream out(p, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// The good fake plugin, spoiled as `c.name` says, written to `to`.
void write_corrupt(const Corruption& c, const fs::path& to) {
    std::vector<char> good = read_all(fake_file("good", "fake"));
    ASSERT_GT(good.size(), 4096u);
    std::vector<char> bad;
    if (c.name == "truncated_half") {
        bad.assign(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(good.size() / 2));
    } else if (c.name == "truncated_after_headers") {
        bad.assign(good.begin(), good.begin() + 1024);
    } else if (c.name == "truncated_last_byte") {
        bad.assign(good.begin(), good.end() - 1);
    } else if (c.name == "truncated_before_last_segment") {
        // The writable segment (relocations are written there) lies wholly past the end.
        ElfW(Ehdr) eh;
        std::memcpy(&eh, good.data(), sizeof eh);
        std::uint64_t last = 0;
        for (unsigned i = 0; i < eh.e_phnum; ++i) {
            ElfW(Phdr) ph;
            std::memcpy(&ph, good.data() + eh.e_phoff + i * sizeof ph, sizeof ph);
            if (ph.p_type == PT_LOAD) last = ph.p_offset;
        }
        ASSERT_GT(last, 0u);
        bad.assign(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(last));
    } else if (c.name == "zero_length") {
    } else if (c.name == "wrong_architecture") {
        bad = good;
        const std::uint16_t other = base::elf_detail::host_machine() == EM_AARCH64 ? EM_X86_64 : EM_AARCH64;
        std::memcpy(bad.data() + offsetof(ElfW(Ehdr), e_machine), &other, sizeof other);
    } else if (c.name == "wrong_class") {
        bad = good;
        bad[EI_CLASS] = sizeof(void*) == 8 ? ELFCLASS32 : ELFCLASS64;
    } else if (c.name == "random_bytes") {
        std::mt19937 rng(4711);
        bad.resize(good.size());
        for (char& b : bad) b = static_cast<char>(rng());
    } else if (c.name == "random_after_elf_header") {
        // A valid identity and header, then noise: headers point anywhere.
        std::mt19937 rng(815);
        bad = good;
        for (std::size_t i = 64; i < bad.size(); ++i) bad[i] = static_cast<char>(rng());
    } else if (c.name == "segment_past_the_end") {
        // Intact size, but the first program header's segment claims bytes the file lacks.
        bad = good;
        ElfW(Ehdr) eh;
        std::memcpy(&eh, bad.data(), sizeof eh);
        ElfW(Phdr) ph;
        std::memcpy(&ph, bad.data() + eh.e_phoff, sizeof ph);
        ph.p_filesz = bad.size() * 2;
        ph.p_memsz = ph.p_filesz;
        std::memcpy(bad.data() + eh.e_phoff, &ph, sizeof ph);
    } else {
        FAIL() << "unknown corruption " << c.name;
    }
    write_all(to, bad);
}

const Corruption kCorruptions[] = {
    {"truncated_half", "truncated"},
    {"truncated_after_headers", "truncated"},
    {"truncated_last_byte", "truncated"},
    {"truncated_before_last_segment", "truncated"},
    {"zero_length", "the file is empty"},
    {"wrong_architecture", "built for"},
    {"wrong_class", "ELF class"},
    {"random_bytes", "not an ELF file"},
    {"random_after_elf_header", "is not a loadable shared library"},
    {"segment_past_the_end", "truncated: segment 0"},
};

class CorruptPlugin : public ::testing::TestWithParam<Corruption> {
protected:
    void SetUp() override {
        dir_ = fs::temp_directory_path() / ("keel-corrupt-" + std::to_string(::getpid()) + "-" + GetParam().name);
        fs::remove_all(dir_);
        fs::create_directories(dir_);
        file_ = dir_ / "libkeel_corrupt.so";
        write_corrupt(GetParam(), file_);
    }
    void TearDown() override { fs::remove_all(dir_); }

    // The runtime rejected the file, naming it and the problem, and the good plugin still loaded.
    void expect_rejected_beside_good(const Result<Runtime>& rt) const {
        ASSERT_TRUE(rt.ok()) << rt.error().message();
        ASSERT_EQ(rt->rejected_plugins().size(), 1u);
        const RejectedPlugin& r = rt->rejected_plugins()[0];
        EXPECT_EQ(r.status, KEEL_STATUS_INVALID_ARGUMENT) << r.reason;
        EXPECT_NE(r.reason.find(file_.string()), std::string::npos) << r.reason;
        EXPECT_NE(r.reason.find(GetParam().reason), std::string::npos) << r.reason;
        ASSERT_EQ(rt->plugins().size(), 1u);
        EXPECT_EQ(rt->plugins()[0].type, "fake");
    }

    fs::path dir_;
    fs::path file_;
};

TEST_P(CorruptPlugin, InAPluginDirectoryIsRejectedWithItsReasonAndTheOthersLoad) {
    expect_rejected_beside_good(Runtime::create(only({dir_, fake_dir("good")})));
}

TEST_P(CorruptPlugin, OnKeelPluginPathIsRejectedWithItsReasonAndTheOthersLoad) {
    ScopedEnv path("KEEL_PLUGIN_PATH", file_.string() + ":" + fake_dir("good").string());
    RuntimeOptions o;
    o.use_default_plugin_dirs = false;
    expect_rejected_beside_good(Runtime::create(o));
}

// What the CUDA and Level Zero tests and keel-cuda-bench do with KEEL_CUDA_PLUGIN's file.
TEST_P(CorruptPlugin, OpenedDirectlyAsAPluginFileIsRefusedWithItsReason) {
    auto lib = keel::testing::PluginLibrary::open(file_.string());
    ASSERT_FALSE(lib.ok());
    EXPECT_NE(lib.error().message().find(file_.string()), std::string::npos) << lib.error().message();
    EXPECT_NE(lib.error().message().find(GetParam().reason), std::string::npos) << lib.error().message();
}

#ifdef KEEL_LEVEL_ZERO_PLUGIN_FILE
TEST_P(CorruptPlugin, AsTheLevelZeroLoaderLeavesThePluginWithoutDevicesAndSaysWhy) {
    ScopedEnv loader("KEEL_LEVEL_ZERO_LOADER", file_.string());
    auto rt = Runtime::create(only({KEEL_LEVEL_ZERO_PLUGIN_FILE}));
    ASSERT_TRUE(rt.ok()) << rt.error().message();
    ASSERT_EQ(rt->plugins().size(), 1u);
    const PluginInfo& p = rt->plugins()[0];
    EXPECT_EQ(p.device_count, 0u);
    EXPECT_NE(p.status.find(file_.string()), std::string::npos) << p.status;
    EXPECT_NE(p.status.find(GetParam().reason), std::string::npos) << p.status;
}
#endif

INSTANTIATE_TEST_SUITE_P(Loader, CorruptPlugin, ::testing::ValuesIn(kCorruptions),
                         [](const ::testing::TestParamInfo<Corruption>& info) { return info.param.name; });

// A FIFO opened for reading blocks until a writer comes: the check opens
// without blocking and refuses anything that is not a regular file.
TEST(Loader, AFifoListedAsAPluginIsRejectedWithoutHanging) {
    const fs::path dir = fs::temp_directory_path() / ("keel-fifo-" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    const fs::path fifo = dir / "libkeel_fifo.so";
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    auto rt = Runtime::create(only({fifo, fake_dir("good")}));
    ASSERT_TRUE(rt.ok());
    ASSERT_EQ(rt->rejected_plugins().size(), 1u);
    EXPECT_NE(rt->rejected_plugins()[0].reason.find("not a regular file"), std::string::npos)
        << rt->rejected_plugins()[0].reason;
    EXPECT_EQ(rt->plugins().size(), 1u);
    fs::remove_all(dir);
}

TEST(Loader, EveryBuiltPluginPassesTheFileCheck) {
    KEEL_EXPECT_OK(base::check_shared_library_file(fake_file("good", "fake").string()));
#ifdef KEEL_LEVEL_ZERO_PLUGIN_FILE
    KEEL_EXPECT_OK(base::check_shared_library_file(KEEL_LEVEL_ZERO_PLUGIN_FILE));
#endif
    const fs::path cpu = fs::path(KEEL_BUILD_PLUGIN_DIR) / "libkeel_cpu.so";
    if (fs::exists(cpu)) {
        KEEL_EXPECT_OK(base::check_shared_library_file(cpu.string()));
    }
}

}  // namespace
}  // namespace keel::test
