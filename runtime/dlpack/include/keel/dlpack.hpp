// keel <-> DLPack: hand a keel buffer to another framework (PyTorch, JAX,
// CuPy ...) as a DLManagedTensor, and take one of theirs as a keel view,
// without copying either way.
//
// Header-only on top of keel's public API (target keel::dlpack, built when
// dlpack/dlpack.h is found): the runtime itself never includes dlpack.h.
//
// Device mapping (device_of): a "cuda" device is kDLCUDA with its index, a
// "level_zero" device kDLOneAPI, any other device kDLCPU when its memory is
// host-addressable and kDLExtDev (index = keel's) otherwise.
//
// Ordering: DLPack hands over memory, not work. Before the other framework
// reads an exported tensor, the keel work that writes it must be complete
// or ordered before the reader (synchronize the stream, or wait on an
// event); likewise before keel uses an imported tensor.
#pragma once

#include <keel/buffer.hpp>
#include <keel/device.hpp>
#include <keel/result.hpp>

#include <dlpack/dlpack.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace keel::dlpack {

// kDLOneAPI (DLPack 0.7); older dlpack.h headers lack the name.
inline constexpr auto kOneApi = static_cast<DLDeviceType>(14);

// The DLPack device a keel device is.
[[nodiscard]] inline DLDevice device_of(const Device& device) {
    const int index = static_cast<int>(device.index());
    if (device.type() == "cuda") return {kDLCUDA, index};
    if (device.type() == "level_zero") return {kOneApi, index};
    if (device.has(DeviceCapability::host_addressable)) return {kDLCPU, index};
    return {kDLExtDev, index};
}

namespace detail {

// What an exported tensor owns: its shape and the owner of its memory.
struct ExportContext {
    std::vector<std::int64_t> shape;
    std::shared_ptr<const void> owner;
    DLManagedTensor tensor{};
};

inline void delete_export(DLManagedTensor* self) {
    // Takes back what export_view released; dropping it releases the owner.
    std::unique_ptr<ExportContext> context(static_cast<ExportContext*>(self->manager_ctx));
}

// Bytes of a compact tensor of `dtype` and `shape`.
[[nodiscard]] inline Result<std::uint64_t> byte_size(const DLDataType& dtype, const std::int64_t* shape,
                                                     std::int32_t ndim, const char* where) {
    if (dtype.bits == 0 || dtype.bits % 8 != 0 || dtype.lanes == 0)
        return Error(KEEL_STATUS_INVALID_ARGUMENT,
                     std::string(where) + " element type of " + std::to_string(dtype.bits) + " bits x " +
                         std::to_string(dtype.lanes) + " lanes is not whole bytes");
    std::uint64_t bytes = std::uint64_t{dtype.bits} / 8 * dtype.lanes;
    for (std::int32_t i = 0; i < ndim; ++i) {
        if (shape[i] < 0)
            return Error(KEEL_STATUS_INVALID_ARGUMENT, std::string(where) + " negative dimension");
        bytes *= static_cast<std::uint64_t>(shape[i]);
    }
    return bytes;
}

}  // namespace detail

// Exports `view` of `device` as a compact row-major tensor of `dtype` and `shape`;
// `owner` keeps its memory alive until the consumer calls the tensor's
// deleter (exactly once, from any thread). INVALID_ARGUMENT when the view
// is empty or smaller than the tensor.
[[nodiscard]] inline Result<DLManagedTensor*> export_view(DeviceView view, std::shared_ptr<const void> owner,
                                                          DLDataType dtype, std::vector<std::int64_t> shape,
                                                          const Device& device) {
    constexpr const char* where = "[dlpack::export_view]";
    if (view.empty() || !view.on(device))
        return Error(KEEL_STATUS_INVALID_ARGUMENT, std::string(where) + " the view is empty or not on " + device.name());
    KEEL_TRY_ASSIGN(std::uint64_t bytes,
                    detail::byte_size(dtype, shape.data(), static_cast<std::int32_t>(shape.size()), where));
    if (bytes > view.size())
        return Error(KEEL_STATUS_INVALID_ARGUMENT, std::string(where) + " the tensor needs " +
                                                       std::to_string(bytes) + " bytes, the view has " +
                                                       std::to_string(view.size()));
    auto context = std::make_unique<detail::ExportContext>();
    context->shape = std::move(shape);
    context->owner = std::move(owner);
    DLTensor& t = context->tensor.dl_tensor;
    t.data = reinterpret_cast<void*>(static_cast<std::uintptr_t>(view.address()));
    t.device = device_of(device);
    t.ndim = static_cast<std::int32_t>(context->shape.size());
    t.dtype = dtype;
    t.shape = context->shape.data();
    t.strides = nullptr;  // compact, row-major
    t.byte_offset = 0;
    context->tensor.manager_ctx = context.get();
    context->tensor.deleter = &detail::delete_export;
    return &context.release()->tensor;
}

// Exports `buffer`, which is on `device` (moved in: the tensor owns it; its
// deleter drops it, which frees it stream-ordered on the buffer's stream).
[[nodiscard]] inline Result<DLManagedTensor*> export_buffer(const Device& device, Buffer buffer,
                                                            DLDataType dtype, std::vector<std::int64_t> shape) {
    if (buffer.empty())
        return Error(KEEL_STATUS_INVALID_ARGUMENT, "[dlpack::export_buffer] the buffer is empty");
    auto owner = std::make_shared<Buffer>(std::move(buffer));
    const DeviceView view = owner->view();
    return export_view(view, std::move(owner), dtype, std::move(shape), device);
}

// A tensor of another framework, taken over: a keel view of its memory
// that keeps it alive. Destroying (or reset()) calls the producer's
// deleter exactly once. Move-only.
//
// Threads: may be sent to another thread; const members may be called
// from several threads at once.
class ImportedTensor {
public:
    ImportedTensor(const ImportedTensor&) = delete;
    ImportedTensor& operator=(const ImportedTensor&) = delete;
    ImportedTensor(ImportedTensor&& other) noexcept
        : tensor_(std::exchange(other.tensor_, nullptr)), view_(std::exchange(other.view_, DeviceView())) {}
    ImportedTensor& operator=(ImportedTensor&& other) noexcept {
        if (this != &other) {
            reset();
            tensor_ = std::exchange(other.tensor_, nullptr);
            view_ = std::exchange(other.view_, DeviceView());
        }
        return *this;
    }
    ~ImportedTensor() { reset(); }

    // The tensor's bytes on the keel device (empty after reset or a move).
    [[nodiscard]] DeviceView view() const noexcept { return view_; }
    // The producer's description (shape, dtype); null after reset or a move.
    [[nodiscard]] const DLTensor* tensor() const noexcept { return tensor_ ? &tensor_->dl_tensor : nullptr; }

    // Gives the tensor back to its producer now.
    void reset() noexcept {
        if (DLManagedTensor* t = std::exchange(tensor_, nullptr); t != nullptr && t->deleter != nullptr)
            t->deleter(t);
        view_ = DeviceView();
    }

private:
    friend Result<ImportedTensor> import_tensor(const Device& device, DLManagedTensor* tensor);
    ImportedTensor(DLManagedTensor* tensor, DeviceView view) noexcept : tensor_(tensor), view_(view) {}

    DLManagedTensor* tensor_ = nullptr;
    DeviceView view_;
};

// Takes over `tensor`, which must live on `device` (device_of(device)) and
// be compact row-major (strides null or matching). On success the result
// owns it; on error nothing is taken and the caller still owns it.
[[nodiscard]] inline Result<ImportedTensor> import_tensor(const Device& device, DLManagedTensor* tensor) {
    constexpr const char* where = "[dlpack::import_tensor]";
    if (tensor == nullptr) return Error(KEEL_STATUS_INVALID_ARGUMENT, std::string(where) + " tensor is null");
    const DLTensor& t = tensor->dl_tensor;
    const DLDevice expected = device_of(device);
    if (t.device.device_type != expected.device_type || t.device.device_id != expected.device_id)
        return Error(KEEL_STATUS_INVALID_ARGUMENT,
                     std::string(where) + " the tensor is on DLPack device (" +
                         std::to_string(static_cast<int>(t.device.device_type)) + ", " +
                         std::to_string(t.device.device_id) + "), not on " + device.name() + " (" +
                         std::to_string(static_cast<int>(expected.device_type)) + ", " +
                         std::to_string(expected.device_id) + ")");
    if (t.ndim < 0 || (t.ndim > 0 && t.shape == nullptr))
        return Error(KEEL_STATUS_INVALID_ARGUMENT, std::string(where) + " bad ndim or null shape");
    KEEL_TRY_ASSIGN(std::uint64_t bytes, detail::byte_size(t.dtype, t.shape, t.ndim, where));
    if (t.strides != nullptr) {
        std::int64_t expected_stride = 1;
        for (std::int32_t i = t.ndim - 1; i >= 0; --i) {
            if (t.shape[i] != 1 && t.strides[i] != expected_stride)
                return Error(KEEL_STATUS_INVALID_ARGUMENT,
                             std::string(where) + " strided tensors are not supported (dimension " +
                                 std::to_string(i) + ")");
            expected_stride *= t.shape[i];
        }
    }
    if (t.data == nullptr && bytes != 0)
        return Error(KEEL_STATUS_INVALID_ARGUMENT, std::string(where) + " data is null");
    const auto address = static_cast<keel_device_addr>(reinterpret_cast<std::uintptr_t>(t.data)) + t.byte_offset;
    return ImportedTensor(tensor, DeviceView(device, address, bytes));
}

}  // namespace keel::dlpack
