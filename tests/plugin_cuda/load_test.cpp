// Loading the CUDA plugin and its device-independent behaviour. These run
// on every machine: on one without a GPU or driver they check that the
// plugin still loads, reports zero devices and says why in CUDA's words.
#include "cuda_plugin_fixture.hpp"

#include <dlfcn.h>
#include <link.h>

#include <cstdlib>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace keel::cuda_test {
namespace {

class CudaPluginLoad : public ::testing::Test {
protected:
    void SetUp() override {
        auto library = Library::open(plugin_library_path());
        ASSERT_TRUE(library.ok()) << library.error().message();
        library_.emplace(std::move(library).value());
        entry_ = library_->entry();
        ASSERT_NE(entry_, nullptr);
        host_ = log_.services();
    }

    // Initialises with host_; the test shuts down what it initialised.
    Outcome init(const keel_plugin_api** api) { return outcome(entry_(&host_, api)); }

    CapturedLog log_;
    std::optional<Library> library_;
    keel_plugin_entry_fn entry_ = nullptr;
    keel_host_services host_{};
};

// An initialised plugin for the tests that only use its table.
class CudaPluginTable : public CudaPluginLoad {
protected:
    void SetUp() override {
        CudaPluginLoad::SetUp();
        if (HasFatalFailure()) return;
        Outcome o = init(&api_);
        ASSERT_EQ(o.code, KEEL_STATUS_OK) << o.message;
        ASSERT_NE(api_, nullptr);
    }
    void TearDown() override {
        if (api_ != nullptr) api_->plugin_shutdown();
    }

    std::string status() const {
        keel_plugin_info info{};
        info.struct_size = KEEL_PLUGIN_INFO_STRUCT_SIZE;
        KEEL_EXPECT_OK(api_->plugin_info(&info));
        return info.status;
    }
    uint32_t count() const {
        uint32_t n = 0;
        KEEL_EXPECT_OK(api_->device_count(&n));
        return n;
    }

    const keel_plugin_api* api_ = nullptr;
};

bool loaded_object_named(const char* fragment) {
    struct Search {
        const char* fragment;
        bool found;
    } search{fragment, false};
    dl_iterate_phdr(
        [](dl_phdr_info* info, size_t, void* data) {
            auto* s = static_cast<Search*>(data);
            if (info->dlpi_name != nullptr && std::strstr(info->dlpi_name, s->fragment) != nullptr)
                s->found = true;
            return 0;
        },
        &search);
    return search.found;
}

TEST_F(CudaPluginLoad, ExportsItsEntrySymbolAndHidesTheCudaRuntime) {
    EXPECT_NE(dlsym(library_->handle(), KEEL_PLUGIN_ENTRY_NAME), nullptr);
    EXPECT_EQ(dlsym(library_->handle(), "cudaGetDeviceCount"), nullptr);
    EXPECT_EQ(dlsym(library_->handle(), "cudaMalloc"), nullptr);
}

TEST_F(CudaPluginLoad, NeedsNoSharedCudaRuntimeLibrary) {
    EXPECT_FALSE(loaded_object_named("libcudart"))
        << "the CUDA runtime must be linked statically so only the driver is needed";
}

TEST_F(CudaPluginLoad, RefusesAnotherAbiMajorNamingBothVersions) {
    host_.abi_major = KEEL_ABI_VERSION_MAJOR + 1;
    host_.abi_minor = 7;
    const keel_plugin_api* api = nullptr;
    Outcome o = init(&api);
    EXPECT_EQ(o.code, KEEL_STATUS_VERSION_MISMATCH);
    EXPECT_EQ(api, nullptr);
    EXPECT_NE(o.message.find("[cuda keel_plugin_init]"), std::string::npos) << o.message;
    EXPECT_NE(o.message.find(std::to_string(KEEL_ABI_VERSION_MAJOR + 1) + ".7"), std::string::npos) << o.message;
    EXPECT_NE(o.message.find(std::to_string(KEEL_ABI_VERSION_MAJOR) + "." + std::to_string(KEEL_ABI_VERSION_MINOR)),
              std::string::npos)
        << o.message;
}

TEST_F(CudaPluginLoad, AcceptsAnyMinorOfItsMajor) {
    host_.abi_minor = KEEL_ABI_VERSION_MINOR + 5;
    const keel_plugin_api* api = nullptr;
    Outcome o = init(&api);
    ASSERT_EQ(o.code, KEEL_STATUS_OK) << o.message;
    ASSERT_NE(api, nullptr);
    api->plugin_shutdown();
}

TEST_F(CudaPluginLoad, RejectsMissingHostServicesAndOutput) {
    const keel_plugin_api* api = nullptr;
    Outcome no_host = outcome(entry_(nullptr, &api));
    EXPECT_EQ(no_host.code, KEEL_STATUS_INVALID_ARGUMENT);
    EXPECT_NE(no_host.message.find("host services"), std::string::npos) << no_host.message;
    Outcome no_out = outcome(entry_(&host_, nullptr));
    EXPECT_EQ(no_out.code, KEEL_STATUS_INVALID_ARGUMENT);
    host_.struct_size = 8;
    Outcome tiny = outcome(entry_(&host_, &api));
    EXPECT_EQ(tiny.code, KEEL_STATUS_INVALID_ARGUMENT);
    EXPECT_EQ(api, nullptr);
}

TEST_F(CudaPluginLoad, InitialisingTwiceSharesOneInstanceUntilTheLastShutdown) {
    const keel_plugin_api* first = nullptr;
    const keel_plugin_api* second = nullptr;
    ASSERT_EQ(init(&first).code, KEEL_STATUS_OK);
    ASSERT_EQ(init(&second).code, KEEL_STATUS_OK);
    EXPECT_EQ(first, second);
    first->plugin_shutdown();
    // Still initialised: the second load holds it.
    uint32_t count = 0;
    KEEL_EXPECT_OK(second->device_count(&count));
    keel_plugin_info info{};
    info.struct_size = KEEL_PLUGIN_INFO_STRUCT_SIZE;
    KEEL_EXPECT_OK(second->plugin_info(&info));
    EXPECT_STREQ(info.device_type, "cuda");
    second->plugin_shutdown();
}

TEST_F(CudaPluginLoad, LogsWhatItFoundThroughTheHostServices) {
    const keel_plugin_api* api = nullptr;
    ASSERT_EQ(init(&api).code, KEEL_STATUS_OK);
    api->plugin_shutdown();
    bool found = false;
    for (const CapturedLog::Line& line : log_.lines())
        if (line.message.find("[cuda]") != std::string::npos && line.message.find("device(s)") != std::string::npos)
            found = true;
    EXPECT_TRUE(found) << "no device summary among " << log_.lines().size() << " log line(s)";
}

TEST_F(CudaPluginTable, DeclaresAbiOneAndFillsEveryEntry) {
    EXPECT_EQ(api_->abi_major, KEEL_ABI_VERSION_MAJOR);
    EXPECT_EQ(api_->abi_minor, KEEL_ABI_VERSION_MINOR);
    ASSERT_EQ(api_->struct_size, KEEL_PLUGIN_API_STRUCT_SIZE);
    // Every slot after the header is an entry; the CUDA plugin has them all
    // but stream_annotate_range, which only a checking plugin offers.
    const std::size_t header = offsetof(keel_plugin_api, plugin_info);
    const auto* base = reinterpret_cast<const char*>(api_);
    for (std::size_t offset = header; offset < api_->struct_size; offset += sizeof(void*)) {
        if (offset == offsetof(keel_plugin_api, stream_annotate_range)) continue;
        void* slot = nullptr;
        std::memcpy(&slot, base + offset, sizeof slot);
        EXPECT_NE(slot, nullptr) << "entry " << (offset - header) / sizeof(void*) << " is missing";
    }
}

TEST_F(CudaPluginTable, DescribesItselfAsTheCudaDeviceType) {
    keel_plugin_info info{};
    info.struct_size = KEEL_PLUGIN_INFO_STRUCT_SIZE;
    KEEL_ASSERT_OK(api_->plugin_info(&info));
    EXPECT_STREQ(info.device_type, "cuda");
    ASSERT_NE(info.version, nullptr);
    EXPECT_GT(std::strlen(info.version), 0u);
    EXPECT_NE(info.status, nullptr);
}

TEST_F(CudaPluginTable, PluginInfoWritesOnlyTheFieldsAnOlderCallerHas) {
    keel_plugin_info info{};
    const char* untouched = "untouched";
    info.struct_size = KEEL_STRUCT_SIZE(keel_plugin_info, device_type);
    info.version = untouched;
    info.status = untouched;
    KEEL_ASSERT_OK(api_->plugin_info(&info));
    EXPECT_STREQ(info.device_type, "cuda");
    EXPECT_EQ(info.version, untouched);
    EXPECT_EQ(info.status, untouched);
}

TEST_F(CudaPluginTable, ZeroDevicesComeWithCudasOwnReason) {
    if (count() > 0) GTEST_SKIP() << "this machine has a CUDA device";
    const std::string why = status();
    // "no CUDA driver: cudaErrorInsufficientDriver: CUDA driver version is
    // insufficient ..." or "no CUDA device: cudaErrorNoDevice: ...".
    EXPECT_NE(why.find("cudaError"), std::string::npos) << why;
    const bool says_what = why.rfind("no CUDA driver: ", 0) == 0 || why.rfind("no CUDA device: ", 0) == 0 ||
                           why.rfind("CUDA driver too old: ", 0) == 0 || why.rfind("CUDA unavailable: ", 0) == 0;
    EXPECT_TRUE(says_what) << why;
    std::cout << "[ reason   ] " << why << "\n";
}

TEST_F(CudaPluginTable, AskingForADevicePastTheCountIsNotFound) {
    const uint32_t n = count();
    keel_device device = nullptr;
    Outcome o = outcome(api_->device_get(n, &device));
    EXPECT_EQ(o.code, KEEL_STATUS_NOT_FOUND);
    EXPECT_EQ(device, nullptr);
    EXPECT_NE(o.message.find("[cuda device_get] no device cuda:" + std::to_string(n)), std::string::npos)
        << o.message;
    if (n == 0) {
        EXPECT_NE(o.message.find(status()), std::string::npos) << "the reason should be repeated";
    }
}

TEST_F(CudaPluginTable, NullHandlesAndOutputsAreInvalidArgumentsNotCrashes) {
    const keel_plugin_api& a = *api_;
    uint8_t host_byte = 0;
    keel_device_properties props{};
    props.struct_size = sizeof props;
    keel_stream stream = nullptr;
    keel_event event = nullptr;
    keel_kernel kernel = nullptr;
    keel_device_addr addr = 0;
    void* ptr = nullptr;
    uint64_t u = 0;
    int32_t done = 0;
    float ms = 0;
    const LaunchArgs no_args;
    const std::vector<std::pair<const char*, std::function<keel_error*()>>> calls = {
        {"plugin_info", [&] { return a.plugin_info(nullptr); }},
        {"device_count", [&] { return a.device_count(nullptr); }},
        {"device_get", [&] { return a.device_get(0, nullptr); }},
        {"device_properties", [&] { return a.device_properties(nullptr, &props); }},
        {"device_memory_info", [&] { return a.device_memory_info(nullptr, &u, &u); }},
        {"stream_create", [&] { return a.stream_create(nullptr, 0, &stream); }},
        {"stream_destroy", [&] { return a.stream_destroy(nullptr); }},
        {"stream_synchronize", [&] { return a.stream_synchronize(nullptr); }},
        {"stream_query", [&] { return a.stream_query(nullptr, &done); }},
        {"stream_wait_event", [&] { return a.stream_wait_event(nullptr, nullptr); }},
        {"stream_enqueue_host_func", [&] { return a.stream_enqueue_host_func(nullptr, nullptr, nullptr); }},
        {"event_create", [&] { return a.event_create(nullptr, 0, &event); }},
        {"event_destroy", [&] { return a.event_destroy(nullptr); }},
        {"event_record", [&] { return a.event_record(nullptr, nullptr); }},
        {"event_query", [&] { return a.event_query(nullptr, &done); }},
        {"event_synchronize", [&] { return a.event_synchronize(nullptr); }},
        {"event_elapsed_time", [&] { return a.event_elapsed_time(nullptr, nullptr, &ms); }},
        {"device_alloc", [&] { return a.device_alloc(nullptr, 64, &addr); }},
        {"device_free", [&] { return a.device_free(nullptr, 0x1000); }},
        {"host_alloc", [&] { return a.host_alloc(nullptr, 64, &ptr); }},
        {"host_free", [&] { return a.host_free(nullptr, &host_byte); }},
        {"memcpy_h2d", [&] { return a.memcpy_h2d(nullptr, 0x1000, &host_byte, 1); }},
        {"memcpy_d2h", [&] { return a.memcpy_d2h(nullptr, &host_byte, 0x1000, 1); }},
        {"memcpy_d2d", [&] { return a.memcpy_d2d(nullptr, 0x1000, 0x2000, 1); }},
        {"memset_d8", [&] { return a.memset_d8(nullptr, 0x1000, 0, 1); }},
        {"memcpy_h2d_inline", [&] { return a.memcpy_h2d_inline(nullptr, 0x1000, &host_byte, 1); }},
        {"kernel_get", [&] { return a.kernel_get(nullptr, "fill", &kernel); }},
        {"kernel_launch", [&] { return a.kernel_launch(nullptr, nullptr, no_args.get()); }},
    };
    for (const auto& [name, call] : calls) {
        Outcome o = outcome(call());
        EXPECT_EQ(o.code, KEEL_STATUS_INVALID_ARGUMENT) << name << ": " << o.message;
        EXPECT_EQ(o.message.rfind(std::string("[cuda ") + name + "] ", 0), 0u) << name << ": " << o.message;
        EXPECT_NE(o.message.find("null"), std::string::npos) << name << ": " << o.message;
    }
    EXPECT_EQ(stream, nullptr);
    EXPECT_EQ(event, nullptr);
    EXPECT_EQ(addr, 0u);
    EXPECT_EQ(ptr, nullptr);
}

TEST_F(CudaPluginLoad, TestKernelsAreServedOnlyWhenRequested) {
    ::unsetenv("KEEL_CUDA_TEST_KERNELS");
    const keel_plugin_api* api = nullptr;
    ASSERT_EQ(init(&api).code, KEEL_STATUS_OK);
    uint32_t n = 0;
    KEEL_ASSERT_OK(api->device_count(&n));
    if (n == 0) {
        api->plugin_shutdown();
        GTEST_SKIP() << "no CUDA device to look kernels up on";
    }
    keel_device device = nullptr;
    KEEL_ASSERT_OK(api->device_get(0, &device));
    keel_kernel k = nullptr;
    KEEL_EXPECT_OK(api->kernel_get(device, "fill", &k));
    Outcome hidden = outcome(api->kernel_get(device, "test_illegal_address", &k));
    EXPECT_EQ(hidden.code, KEEL_STATUS_NOT_FOUND);
    // The listing names the served kernels (more are added over time) and no test kernel.
    const std::size_t listed = hidden.message.find("available: axpy, fill, ");
    EXPECT_NE(listed, std::string::npos) << hidden.message;
    EXPECT_EQ(hidden.message.find("test_", listed), std::string::npos) << hidden.message;
    api->plugin_shutdown();
}

}  // namespace
}  // namespace keel::cuda_test
