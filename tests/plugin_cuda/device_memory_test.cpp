// Device properties, device memory and pinned host memory on a real GPU.
#include "cuda_plugin_fixture.hpp"

#include <cstring>
#include <string>

namespace keel::cuda_test {
namespace {

using CudaDevice = CudaDeviceTest;

constexpr uint64_t kMiB = 1ull << 20;

keel_device_properties properties_of(const keel_plugin_api& api, keel_device device) {
    keel_device_properties p{};
    p.struct_size = KEEL_DEVICE_PROPERTIES_STRUCT_SIZE;
    KEEL_EXPECT_OK(api.device_properties(device, &p));
    return p;
}

TEST_F(CudaDevice, PropertiesDescribeAnNvidiaGpu) {
    const keel_device_properties p = properties_of(api(), device());
    EXPECT_GT(std::strlen(p.name), 0u);
    EXPECT_STREQ(p.vendor, "NVIDIA");
    EXPECT_GT(p.total_memory, 1024 * kMiB);
    EXPECT_GT(p.compute_units, 0u);
    EXPECT_EQ(p.max_allocation, p.total_memory);
    EXPECT_EQ(p.alloc_alignment, 256u);
    EXPECT_TRUE(p.capabilities & KEEL_DEVICE_CAP_EVENT_TIMING);
    EXPECT_TRUE(p.capabilities & KEEL_DEVICE_CAP_PINNED_MEMORY);
    EXPECT_TRUE(p.capabilities & KEEL_DEVICE_CAP_CONCURRENT_STREAMS);
    // cudaMalloc memory faults on the host: the plugin must not claim otherwise.
    EXPECT_FALSE(p.capabilities & KEEL_DEVICE_CAP_HOST_ADDRESSABLE);
    std::cout << "[ device   ] " << p.name << ", " << p.total_memory / kMiB << " MiB, " << p.compute_units
              << " SMs\n";
}

TEST_F(CudaDevice, PropertiesWriteOnlyTheFieldsAnOlderCallerHas) {
    keel_device_properties p{};
    std::memset(&p, 0xAB, sizeof p);
    p.struct_size = KEEL_STRUCT_SIZE(keel_device_properties, total_memory);
    KEEL_ASSERT_OK(api().device_properties(device(), &p));
    EXPECT_STREQ(p.vendor, "NVIDIA");
    EXPECT_GT(p.total_memory, 0u);
    EXPECT_EQ(p.capabilities, 0xABABABABu) << "a field past struct_size was written";
    EXPECT_EQ(p.alloc_alignment, 0xABABABABABABABABull);
}

TEST_F(CudaDevice, MemoryInfoReportsTheTotalAndSeesAnAllocation) {
    uint64_t free_before = 0;
    uint64_t total = 0;
    KEEL_ASSERT_OK(api().device_memory_info(device(), &free_before, &total));
    EXPECT_EQ(total, properties_of(api(), device()).total_memory);
    EXPECT_LE(free_before, total);
    DeviceBuffer big(api(), device(), 512 * kMiB);
    ASSERT_NE(big.addr(), 0u);
    uint64_t free_after = 0;
    KEEL_ASSERT_OK(api().device_memory_info(device(), &free_after, &total));
    EXPECT_LE(free_after + 256 * kMiB, free_before) << "a 512 MiB allocation should show in free memory";
}

TEST_F(CudaDevice, AllocationsAreAlignedAndDistinct) {
    DeviceBuffer a(api(), device(), 1);
    DeviceBuffer b(api(), device(), 1000);
    ASSERT_NE(a.addr(), 0u);
    ASSERT_NE(b.addr(), 0u);
    EXPECT_NE(a.addr(), b.addr());
    EXPECT_EQ(a.addr() % 256, 0u);
    EXPECT_EQ(b.addr() % 256, 0u);
}

TEST_F(CudaDevice, ZeroByteAllocationIsAnInvalidArgument) {
    keel_device_addr addr = 0;
    Outcome o = outcome(api().device_alloc(device(), 0, &addr));
    EXPECT_EQ(o.code, KEEL_STATUS_INVALID_ARGUMENT) << o.message;
    EXPECT_EQ(addr, 0u);
}

TEST_F(CudaDevice, AllocationLargerThanTheDeviceIsOutOfMemory) {
    const uint64_t total = properties_of(api(), device()).total_memory;
    for (uint64_t too_big : {total + 1, total * 4, ~uint64_t{0}}) {
        keel_device_addr addr = 0;
        Outcome o = outcome(api().device_alloc(device(), too_big, &addr));
        EXPECT_EQ(o.code, KEEL_STATUS_OUT_OF_MEMORY) << o.message;
        EXPECT_NE(o.message.find("[cuda device_alloc]"), std::string::npos) << o.message;
        EXPECT_NE(o.message.find("cuda:0"), std::string::npos) << o.message;
        EXPECT_EQ(addr, 0u);
    }
    // All of the memory does not fit either (the context uses some): CUDA says so.
    keel_device_addr addr = 0;
    Outcome o = outcome(api().device_alloc(device(), total, &addr));
    EXPECT_EQ(o.code, KEEL_STATUS_OUT_OF_MEMORY) << o.message;
    EXPECT_NE(o.message.find("cudaErrorMemoryAllocation: out of memory"), std::string::npos) << o.message;
    EXPECT_EQ(addr, 0u);
    // The failure is not sticky: the device still allocates.
    DeviceBuffer fine(api(), device(), kMiB);
    EXPECT_NE(fine.addr(), 0u);
}

TEST_F(CudaDevice, FreeingWhatWasNotAllocatedIsRejected) {
    keel_device_addr addr = 0;
    KEEL_ASSERT_OK(api().device_alloc(device(), 4096, &addr));
    Outcome inside = outcome(api().device_free(device(), addr + 256));
    EXPECT_EQ(inside.code, KEEL_STATUS_INVALID_ARGUMENT) << inside.message;
    KEEL_ASSERT_OK(api().device_free(device(), addr));
    Outcome twice = outcome(api().device_free(device(), addr));
    EXPECT_EQ(twice.code, KEEL_STATUS_INVALID_ARGUMENT) << twice.message;
    EXPECT_NE(twice.message.find("not the start of a live device allocation of cuda:0"), std::string::npos)
        << twice.message;
}

TEST_F(CudaDevice, PinnedHostMemoryIsOrdinaryHostMemory) {
    PinnedBuffer pinned(api(), device(), 4 * kMiB);
    ASSERT_NE(pinned.get(), nullptr);
    std::memset(pinned.get(), 0x5A, 4 * kMiB);
    EXPECT_EQ(pinned.as<unsigned char>()[4 * kMiB - 1], 0x5A);
}

TEST_F(CudaDevice, FreeingHostMemoryNotFromHostAllocIsRejected) {
    std::vector<char> ordinary(64);
    Outcome o = outcome(api().host_free(device(), ordinary.data()));
    EXPECT_EQ(o.code, KEEL_STATUS_INVALID_ARGUMENT) << o.message;
    EXPECT_NE(o.message.find("is not the start of a live pinned host allocation of cuda:0"), std::string::npos)
        << o.message;
    void* pinned = nullptr;
    KEEL_ASSERT_OK(api().host_alloc(device(), 64, &pinned));
    KEEL_ASSERT_OK(api().host_free(device(), pinned));
    EXPECT_EQ(outcome(api().host_free(device(), pinned)).code, KEEL_STATUS_INVALID_ARGUMENT) << "double free";
}

}  // namespace
}  // namespace keel::cuda_test
