// A framework running its own CUDA kernel on a keel stream, through
// Stream::native_handle: the kernel sees what keel's earlier work wrote and
// keel's later work sees what the kernel wrote, with no synchronisation in
// between (one CUDA stream orders them). Skips without a GPU.
#include <keel/keel.hpp>

#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <vector>

namespace {

__global__ void add_one(float* data, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) data[i] += 1.0f;
}

TEST(CudaNativeHandle, APlainCudaKernelOnAKeelStreamIsOrderedWithKeelWork) {
    keel::Runtime rt = keel::Runtime::create().expect("loading plugins");
    auto device = rt.device("cuda:0");
    if (!device.ok()) GTEST_SKIP() << "no CUDA device: " << device.error().message();

    auto dev = device->native_handle();
    ASSERT_TRUE(dev.ok()) << dev.error().message();
    EXPECT_EQ(dev->kind, KEEL_NATIVE_HANDLE_CUDA_DEVICE);

    constexpr unsigned n = 1 << 20;
    keel::Stream stream = keel::Stream::create(*device).expect("stream");
    auto native = stream.native_handle();
    ASSERT_TRUE(native.ok()) << native.error().message();
    ASSERT_EQ(native->kind, KEEL_NATIVE_HANDLE_CUDA_STREAM);
    cudaStream_t cuda_stream = native->as<cudaStream_t>();

    keel::Buffer buf = keel::Buffer::allocate(stream, n * sizeof(float)).expect("buffer");
    keel::Kernel fill = keel::Kernel::find(*device, "fill").expect("fill");
    // keel, then CUDA, then keel again, then CUDA: no synchronisation between.
    stream.launch(fill, keel::KernelArgs().buffer(buf, KEEL_DTYPE_F32).scalar(3.0f)).expect("fill");
    auto* data = reinterpret_cast<float*>(static_cast<std::uintptr_t>(buf.address()));
    add_one<<<(n + 255) / 256, 256, 0, cuda_stream>>>(data, n);
    ASSERT_EQ(cudaGetLastError(), cudaSuccess);
    keel::Buffer copy = keel::Buffer::allocate(stream, n * sizeof(float)).expect("buffer");
    stream.copy(copy, buf).expect("device copy");
    auto* copied = reinterpret_cast<float*>(static_cast<std::uintptr_t>(copy.address()));
    add_one<<<(n + 255) / 256, 256, 0, cuda_stream>>>(copied, n);
    ASSERT_EQ(cudaGetLastError(), cudaSuccess);

    std::vector<float> out = stream.copy_to_vector<float>(copy).expect("copy").get().expect("wait");
    ASSERT_EQ(out.size(), n);
    for (unsigned i = 0; i < n; i += 4099) ASSERT_EQ(out[i], 5.0f) << i;  // 3 + 1, copied, + 1
}

}  // namespace
