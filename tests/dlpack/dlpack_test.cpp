// The DLPack bridge on cpu:0 (not host-addressable: kDLExtDev) and on the
// fake device (host-addressable: kDLCPU): export hands the memory over with
// its owner and the deleter releases it; import takes a tensor without a
// copy and calls its deleter exactly once; what does not fit is refused
// without taking the tensor.
#include <keel/dlpack.hpp>
#include <keel/keel.hpp>
#include <keel/testing/result.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <numeric>
#include <vector>

namespace {

constexpr DLDataType kF32{kDLFloat, 32, 1};

class DlpackTest : public ::testing::Test {
protected:
    static const keel::Runtime& runtime() {
        static keel::Runtime rt = [] {
            keel::RuntimeOptions o;
            o.plugin_path = {KEEL_FAKE_GOOD_DIR};
            return keel::Runtime::create(o).expect("loading plugins");
        }();
        return rt;
    }
    static keel::Device device(const char* name) { return runtime().device(name).expect("device"); }
};

// A 4x5 f32 tensor "of another framework" at `data` on `device`, whose
// deleter counts its calls.
struct ForeignTensor {
    ForeignTensor(void* data, DLDevice device) {
        managed.manager_ctx = this;
        managed.deleter = [](DLManagedTensor* self) {
            static_cast<ForeignTensor*>(self->manager_ctx)->deleted.fetch_add(1);
        };
        DLTensor& t = managed.dl_tensor;
        t.data = data;
        t.device = device;
        t.ndim = 2;
        t.shape = shape.data();
        t.dtype = kF32;
    }
    ForeignTensor(const ForeignTensor&) = delete;
    ForeignTensor& operator=(const ForeignTensor&) = delete;

    DLManagedTensor managed{};
    std::vector<std::int64_t> shape{4, 5};
    std::atomic<int> deleted{0};
};

TEST_F(DlpackTest, DevicesMapToTheirDlpackTypes) {
    EXPECT_EQ(keel::dlpack::device_of(device("cpu:0")).device_type, kDLExtDev) << "not host-addressable";
    EXPECT_EQ(keel::dlpack::device_of(device("fake:1")).device_type, kDLCPU) << "host-addressable";
    EXPECT_EQ(keel::dlpack::device_of(device("fake:1")).device_id, 1);
}

TEST_F(DlpackTest, AnExportedBufferDescribesItsMemoryAndItsDeleterReleasesIt) {
    keel::Device cpu = device("cpu:0");
    keel::Stream s = keel::Stream::create(cpu).expect("stream");
    keel::Buffer buf = keel::Buffer::allocate(s, 6 * sizeof(float)).expect("buffer");
    const keel_device_addr address = buf.address();
    KEEL_ASSERT_OK_AND_ASSIGN(DLManagedTensor * t, keel::dlpack::export_buffer(cpu, std::move(buf), kF32, {2, 3}));
    EXPECT_TRUE(buf.empty()) << "the tensor owns the buffer now";
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(t->dl_tensor.data), address);
    EXPECT_EQ(t->dl_tensor.device.device_type, kDLExtDev);
    ASSERT_EQ(t->dl_tensor.ndim, 2);
    EXPECT_EQ(t->dl_tensor.shape[0], 2);
    EXPECT_EQ(t->dl_tensor.shape[1], 3);
    EXPECT_EQ(t->dl_tensor.strides, nullptr);
    EXPECT_EQ(t->dl_tensor.dtype.bits, 32);
    ASSERT_NE(t->deleter, nullptr);
    t->deleter(t);  // the consumer is done: the buffer goes back to keel's allocator
    EXPECT_TRUE(s.synchronize().ok());
}

TEST_F(DlpackTest, TheOwnerOfAnExportedViewLivesUntilTheDeleterRuns) {
    keel::Device cpu = device("cpu:0");
    KEEL_ASSERT_OK_AND_ASSIGN(keel::RawBuffer raw, keel::RawBuffer::allocate(cpu, 64));
    std::atomic<int> released{0};
    std::shared_ptr<const void> owner(&released, [](std::atomic<int>* r) { r->fetch_add(1); });
    KEEL_ASSERT_OK_AND_ASSIGN(DLManagedTensor * t,
                              keel::dlpack::export_view(raw.view(), std::move(owner), kF32, {16}, cpu));
    EXPECT_EQ(released.load(), 0);
    t->deleter(t);
    EXPECT_EQ(released.load(), 1);
}

TEST_F(DlpackTest, ATensorLargerThanItsViewIsRefused) {
    keel::Device cpu = device("cpu:0");
    KEEL_ASSERT_OK_AND_ASSIGN(keel::RawBuffer raw, keel::RawBuffer::allocate(cpu, 64));
    KEEL_EXPECT_ERROR(keel::dlpack::export_view(raw.view(), nullptr, kF32, {17}, cpu), KEEL_STATUS_INVALID_ARGUMENT);
    KEEL_EXPECT_ERROR(keel::dlpack::export_view(raw.view(), nullptr, kF32, {-1}, cpu), KEEL_STATUS_INVALID_ARGUMENT);
    KEEL_EXPECT_ERROR(keel::dlpack::export_view(raw.view(), nullptr, kF32, {4}, device("fake:0")),
                      KEEL_STATUS_INVALID_ARGUMENT);
}

TEST_F(DlpackTest, AnImportedTensorIsAViewWithoutACopyAndItsDeleterRunsOnce) {
    keel::Device cpu = device("cpu:0");
    keel::Stream s = keel::Stream::create(cpu).expect("stream");
    KEEL_ASSERT_OK_AND_ASSIGN(keel::RawBuffer raw, keel::RawBuffer::allocate(cpu, 40 * sizeof(float)));
    std::vector<float> values(40);
    std::iota(values.begin(), values.end(), 0.0f);
    KEEL_ASSERT_OK(s.copy(raw, values));

    ForeignTensor foreign(reinterpret_cast<void*>(static_cast<std::uintptr_t>(raw.address())), {kDLExtDev, 0});
    foreign.managed.dl_tensor.byte_offset = 20 * sizeof(float);  // the second half
    std::atomic<int>& deleted = foreign.deleted;

    {
        KEEL_ASSERT_OK_AND_ASSIGN(keel::dlpack::ImportedTensor imported,
                                  keel::dlpack::import_tensor(cpu, &foreign.managed));
        EXPECT_EQ(imported.view().address(), raw.address() + 20 * sizeof(float)) << "no copy";
        EXPECT_EQ(imported.view().size(), 20 * sizeof(float));
        KEEL_ASSERT_OK_AND_ASSIGN(auto future, s.copy_to_vector<float>(imported.view()));
        KEEL_ASSERT_OK_AND_ASSIGN(std::vector<float> got, std::move(future).get());
        EXPECT_EQ(got, std::vector<float>(values.begin() + 20, values.end()));
        keel::dlpack::ImportedTensor moved = std::move(imported);
        EXPECT_EQ(imported.tensor(), nullptr);
        EXPECT_EQ(deleted.load(), 0) << "alive while the view is";
    }
    EXPECT_EQ(deleted.load(), 1) << "exactly once, by the last owner";
}

TEST_F(DlpackTest, ATensorOfAnotherDeviceOrStridedIsRefusedAndNotTaken) {
    keel::Device cpu = device("cpu:0");
    std::vector<float> host(20);
    // Host memory of another framework: not cpu:0's device memory.
    ForeignTensor foreign(host.data(), {kDLCPU, 0});
    DLTensor& t = foreign.managed.dl_tensor;
    std::atomic<int>& deleted = foreign.deleted;
    KEEL_EXPECT_ERROR(keel::dlpack::import_tensor(cpu, &foreign.managed), KEEL_STATUS_INVALID_ARGUMENT);
    t.device = {kDLExtDev, 0};
    std::int64_t strides[2] = {1, 4};  // column-major
    t.strides = strides;
    KEEL_EXPECT_ERROR(keel::dlpack::import_tensor(cpu, &foreign.managed), KEEL_STATUS_INVALID_ARGUMENT);
    EXPECT_EQ(deleted.load(), 0) << "a refused tensor stays the caller's";
}

TEST_F(DlpackTest, ARoundTripThroughDlpackOnAHostAddressableDeviceIsTheSameMemory) {
    keel::Device fake = device("fake:0");
    keel::Stream s = keel::Stream::create(fake).expect("stream");
    keel::Buffer buf = keel::Buffer::allocate(s, 8 * sizeof(float)).expect("buffer");
    const std::vector<float> values{1, 2, 3, 4, 5, 6, 7, 8};
    KEEL_ASSERT_OK(s.copy(buf, values));
    KEEL_ASSERT_OK(s.synchronize());
    KEEL_ASSERT_OK_AND_ASSIGN(DLManagedTensor * t, keel::dlpack::export_buffer(fake, std::move(buf), kF32, {8}));
    ASSERT_EQ(t->dl_tensor.device.device_type, kDLCPU);
    // kDLCPU: any framework may read it directly.
    EXPECT_EQ(std::memcmp(t->dl_tensor.data, values.data(), sizeof(float) * 8), 0);
    KEEL_ASSERT_OK_AND_ASSIGN(keel::dlpack::ImportedTensor back, keel::dlpack::import_tensor(fake, t));
    KEEL_ASSERT_OK_AND_ASSIGN(auto future, s.copy_to_vector<float>(back.view()));
    KEEL_ASSERT_OK_AND_ASSIGN(std::vector<float> got, std::move(future).get());
    EXPECT_EQ(got, values);
}

}  // namespace
