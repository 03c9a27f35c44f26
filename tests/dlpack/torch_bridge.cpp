// A C entry point for torch_dlpack_test.py (loaded with ctypes): keel
// exports a filled buffer as a DLManagedTensor and imports one from
// PyTorch, through keel::dlpack only.
#include <keel/dlpack.hpp>
#include <keel/keel.hpp>

#include <cmath>
#include <numeric>
#include <optional>
#include <vector>

namespace {
const keel::Runtime& runtime() {
    static const keel::Runtime rt = keel::Runtime::create().expect("loading plugins");
    return rt;
}
constexpr DLDataType kF32{kDLFloat, 32, 1};
}  // namespace

// A tensor of `n` floats equal to `value` on `device`, or null.
extern "C" __attribute__((visibility("default"))) DLManagedTensor* keel_torch_export_filled(
    const char* device, int n, float value) {
    auto d = runtime().device(device);
    if (!d.ok()) return nullptr;
    auto stream = keel::Stream::create(*d);
    if (!stream.ok()) return nullptr;
    auto buf = keel::Buffer::allocate(*stream, static_cast<std::uint64_t>(n) * sizeof(float));
    if (!buf.ok()) return nullptr;
    if (!stream->copy(*buf, std::vector<float>(static_cast<std::size_t>(n), value)).ok()) return nullptr;
    if (!stream->synchronize().ok()) return nullptr;  // DLPack hands over memory, not work
    auto t = keel::dlpack::export_buffer(*d, std::move(*buf), kF32, {n});
    return t.ok() ? *t : nullptr;
}

// The sum of an f32 tensor imported from another framework (its deleter is
// called before this returns), or NaN when keel refuses it.
extern "C" __attribute__((visibility("default"))) double keel_torch_import_sum(DLManagedTensor* tensor,
                                                                              const char* device) {
    auto d = runtime().device(device);
    if (!d.ok()) return NAN;
    auto imported = keel::dlpack::import_tensor(*d, tensor);
    if (!imported.ok()) return NAN;
    auto stream = keel::Stream::create(*d);
    if (!stream.ok()) return NAN;
    auto future = stream->copy_to_vector<float>(imported->view());
    if (!future.ok()) return NAN;
    auto values = std::move(*future).get();
    if (!values.ok()) return NAN;
    return std::accumulate(values->begin(), values->end(), 0.0);
}
