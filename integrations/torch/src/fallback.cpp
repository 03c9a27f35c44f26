// The boxed CPU fallback of privateuseone. It does not trust the schema:
// every keel storage an operator touches is mirrored on the host byte for
// byte (the same views, the same conj/neg bits), the CPU kernel runs on the
// mirror, and every storage whose bytes (or every tensor whose shape) the
// kernel changed is written back, declared or not. Outputs are made on the
// keel device the operator runs on; outputs that alias an argument are
// views of that argument's keel storage.
#include "errors.hpp"
#include "fallback.hpp"
#include "mirror_pool.hpp"
#include "tensors.hpp"

#include <ATen/ATen.h>
#include <c10/core/DeviceGuard.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <torch/library.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <unordered_map>
#include <vector>

namespace keel_torch {

namespace {

struct Inventory {
    std::mutex mutex;
    std::set<std::string> names;
};

Inventory& inventory() {
    static Inventory instance;
    return instance;
}

// Where a fallback's time goes, summed over every call since the last reset.
struct Counters {
    std::atomic<std::uint64_t> calls{0}, bytes_down{0}, bytes_up{0}, download_ns{0}, kernel_ns{0}, write_back_ns{0};
};

Counters& counters() {
    static Counters instance;
    return instance;
}

std::uint64_t since(std::chrono::steady_clock::time_point start) {
    return static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count());
}

void note(const c10::OperatorHandle& op) {
    const c10::OperatorName& name = op.schema().operator_name();
    Inventory& inv = inventory();
    std::lock_guard lock(inv.mutex);
    inv.names.insert(name.overload_name.empty() ? name.name : name.name + "." + name.overload_name);
}

// Host mirrors start at this alignment of the keel storage, so that every
// view of it (any dtype) keeps a whole element offset.
constexpr std::uint64_t mirror_alignment = 64;

// The bytes [lo, hi) of one keel storage, mirrored on the host.
struct MirroredStorage {
    c10::Storage keel;
    c10::DeviceIndex device = 0;
    std::uint64_t lo = 0;
    std::uint64_t hi = 0;
    at::Tensor host;                 // uint8 [hi - lo]: the mirror
    std::size_t before = 0;          // where the mirror's bytes before the kernel are in the snapshot
    bool declared_written = false;   // the schema says so: written back without comparing
    // The host reads the device's bytes (a host-addressable device): the
    // mirror is compared with them, no snapshot is taken.
    bool compare_with_device = false;
    // Only an out= argument uses it, covering every byte: out= kernels write
    // all of out and never read its old values, so it is not downloaded.
    bool out_only = true;
};

// One keel tensor argument and the host tensor standing for it.
struct MirroredTensor {
    at::Tensor keel;
    at::Tensor host;
    int storage = -1;  // index into the mirrored storages; -1: own host storage (no elements)
    std::vector<std::int64_t> sizes, strides;
    std::int64_t offset = 0;
    const void* data = nullptr;
};

// The byte range of t's storage its elements occupy (numel > 0).
std::pair<std::uint64_t, std::uint64_t> byte_extent(const at::Tensor& t) {
    std::int64_t last = t.storage_offset();
    for (std::int64_t d = 0; d < t.dim(); ++d) last += (t.size(d) - 1) * t.stride(d);
    const auto item = static_cast<std::uint64_t>(t.element_size());
    return {static_cast<std::uint64_t>(t.storage_offset()) * item, (static_cast<std::uint64_t>(last) + 1) * item};
}

// Whether the CPU kernel of `op` may take a CPU tensor of any size with
// keel tensors, as CUDA's does (indices of indexing on the host).
bool takes_host_indices(const c10::OperatorHandle& op) {
    const std::string& name = op.schema().name();
    return name == "aten::index" || name == "aten::index_put_" || name == "aten::_index_put_impl_" ||
           name == "aten::index_put";
}

class Mirror {
public:
    explicit Mirror(const c10::OperatorHandle& op) : op_(op) {}
    Mirror(const Mirror&) = delete;
    Mirror& operator=(const Mirror&) = delete;
    ~Mirror() {
        if (release_kept_ != nullptr) *release_kept_ = false;
    }

    // Replaces every keel tensor and keel device argument of the stack's
    // top `count` values by its host counterpart.
    void to_host(torch::jit::Stack& stack, std::size_t count) {
        const auto args = torch::jit::last(stack, count);
        const auto& schema = op_.schema().arguments();
        // First pass: the device, the device rules, the storages' extents.
        for (std::size_t i = 0; i < count; ++i) {
            const bool written = i < schema.size() && schema[i].alias_info() && schema[i].alias_info()->isWrite();
            const bool out = written && schema[i].is_out();
            visit(args[i], [&](const at::Tensor& t) { plan(t, written, out); });
            if (args[i].isDevice()) note_device(args[i].toDevice());
        }
        download();
        for (std::size_t i = 0; i < count; ++i) {
            c10::IValue& value = stack[stack.size() - count + i];
            value = replace(value);
        }
    }

    // Writes back what the kernel changed; replaces the top `count` values
    // (the outputs) by keel tensors.
    void from_host(torch::jit::Stack& stack, std::size_t count) {
        write_back();
        for (std::size_t i = stack.size() - count; i < stack.size(); ++i) stack[i] = output(stack[i]);
    }

private:
    template <class F>
    static void visit(const c10::IValue& value, F&& f) {
        if (value.isTensor()) {
            f(value.toTensor());
        } else if (value.isTensorList()) {
            for (const at::Tensor& t : value.toTensorList()) f(t);
        } else if (value.isList()) {
            for (const c10::IValue& element : value.toListRef())
                if (element.isTensor()) f(element.toTensor());
        }
    }

    void note_device(const c10::Device& device) {
        if (device.type() != c10::DeviceType::PrivateUse1) return;
        const c10::DeviceIndex index =
            device.has_index() ? device.index() : static_cast<c10::DeviceIndex>(current_device_index());
        if (!device_) use(c10::Device(c10::DeviceType::PrivateUse1, index));
    }

    // The operator's device, held against recover() until the outputs are made.
    void use(const c10::Device& device) {
        device_ = device;
        use_.emplace(torch_device(device.index()));
    }

    void plan(const at::Tensor& t, bool written, bool out) {
        if (!t.defined()) return;
        if (!is_keel(t)) {
            if (t.dim() == 0 || takes_host_indices(op_)) return;  // a host scalar, or host indices
            host_mixed_ = t.device();
            check_devices();
            return;
        }
        if (device_ && *device_ != t.device()) fail_devices(*device_, t.device());
        if (!device_) use(t.device());
        check_devices();
        if (const auto seen = mirrored_.find(t.unsafeGetTensorImpl()); seen != mirrored_.end()) {
            if (seen->second >= 0) {
                MirroredStorage& s = storages_[static_cast<std::size_t>(seen->second)];
                s.declared_written = s.declared_written || written;
                s.out_only = s.out_only && out && writes_whole_storage(t);
            }
            return;
        }
        int index = -1;
        if (t.numel() > 0) {
            // Read or written in part, as far as the fallback can tell.
            check_data_known(t.storage());
            c10::StorageImpl* impl = t.storage().unsafeGetStorageImpl();
            const auto [lo, hi] = byte_extent(t);
            const auto found = storage_index_.find(impl);
            if (found == storage_index_.end()) {
                index = static_cast<int>(storages_.size());
                storage_index_.emplace(impl, index);
                MirroredStorage s;
                s.keel = t.storage();
                s.device = t.device().index();
                s.lo = lo - lo % mirror_alignment;
                s.hi = hi;
                storages_.push_back(std::move(s));
            } else {
                index = found->second;
                MirroredStorage& s = storages_[static_cast<std::size_t>(index)];
                s.lo = std::min(s.lo, lo - lo % mirror_alignment);
                s.hi = std::max(s.hi, hi);
            }
            MirroredStorage& s = storages_[static_cast<std::size_t>(index)];
            s.declared_written = s.declared_written || written;
            s.out_only = s.out_only && out && writes_whole_storage(t);
        }
        mirrored_.emplace(t.unsafeGetTensorImpl(), index);
    }

    void check_devices() const {
        if (device_ && host_mixed_) fail_devices(*device_, *host_mixed_);
    }

    [[noreturn]] void fail_devices(const c10::Device& a, const c10::Device& b) const {
        TORCH_CHECK(false, "Expected all tensors to be on the same device, but found at least two devices, ", a,
                    " and ", b, "! (in ", op_.schema().operator_name(), ")");
    }

    // Every mirrored storage's bytes, with one host wait for them all.
    void download() {
        std::vector<keel::HostCopy> copies;
        copies.reserve(storages_.size());
        for (MirroredStorage& s : storages_) {
            s.hi = std::min<std::uint64_t>(s.hi, s.keel.nbytes());
            s.host = at::empty({0}, at::TensorOptions().dtype(at::kByte));
            s.host.set_(mirror_storage(s.hi - s.lo), 0, {static_cast<std::int64_t>(s.hi - s.lo)}, {1});
            if (s.out_only) continue;
            const TorchDevice& device = torch_device(s.device);
            const keel::DeviceView from(device.device(), reinterpret_cast<std::uintptr_t>(s.keel.data()) + s.lo,
                                        s.hi - s.lo);
            const std::span<std::byte> to(static_cast<std::byte*>(s.host.data_ptr()), s.hi - s.lo);
            copies.push_back(unwrap(unwrap(device.current_stream())->copy(to, from)));
            counters().bytes_down += s.hi - s.lo;
        }
        for (keel::HostCopy& copy : copies) unwrap(copy.wait());
        std::size_t total = 0;
        for (MirroredStorage& s : storages_) {
            if (s.declared_written) continue;
            s.compare_with_device =
                torch_device(s.device).device().has(keel::DeviceCapability::host_addressable);
            if (s.compare_with_device) continue;
            s.before = total;
            total += s.hi - s.lo;
        }
        // The thread's snapshot buffer is kept between calls up to a bound:
        // fresh pages for every call cost more than the copy into them.
        constexpr std::size_t kept_snapshot_bytes = std::size_t{16} << 20;
        thread_local std::vector<std::byte> kept;
        thread_local bool kept_in_use = false;  // a fallback inside a fallback gets its own
        if (total <= kept_snapshot_bytes && !kept_in_use) {
            if (kept.size() < total) kept.resize(total);
            snapshot_ = kept.data();
            kept_in_use = true;
            release_kept_ = &kept_in_use;
        } else {
            own_snapshot_.resize(total);
            snapshot_ = own_snapshot_.data();
        }
        for (MirroredStorage& s : storages_) {
            if (s.declared_written || s.compare_with_device) continue;
            std::memcpy(snapshot_ + s.before, s.host.data_ptr(), s.hi - s.lo);
        }
    }

    c10::IValue replace(const c10::IValue& value) {
        if (value.isTensor()) return host_of(value.toTensor());
        if (value.isTensorList()) {
            c10::List<at::Tensor> list;
            list.reserve(value.toTensorList().size());
            for (const at::Tensor& t : value.toTensorList()) list.push_back(host_of(t));
            return list;
        }
        if (value.isList()) {
            const c10::List<c10::IValue> original = value.toList();
            c10::impl::GenericList list(original.elementType());
            list.reserve(original.size());
            for (const c10::IValue& element : original)
                list.push_back(element.isTensor() ? c10::IValue(host_of(element.toTensor())) : element);
            return list;
        }
        if (value.isDevice() && value.toDevice().type() == c10::DeviceType::PrivateUse1) return c10::Device(c10::kCPU);
        return value;
    }

    at::Tensor host_of(const at::Tensor& t) {
        if (!t.defined() || !is_keel(t)) return t;
        const auto found = by_impl_.find(t.unsafeGetTensorImpl());
        if (found != by_impl_.end()) return tensors_[found->second].host;
        MirroredTensor m;
        m.keel = t;
        m.storage = mirrored_.at(t.unsafeGetTensorImpl());
        const at::TensorOptions options = at::TensorOptions().dtype(t.scalar_type());
        if (m.storage < 0) {
            m.host = at::empty_strided(t.sizes(), t.strides(), options);
        } else {
            const MirroredStorage& s = storages_[static_cast<std::size_t>(m.storage)];
            const auto item = static_cast<std::uint64_t>(t.element_size());
            const auto offset = static_cast<std::int64_t>((static_cast<std::uint64_t>(t.storage_offset()) * item - s.lo) / item);
            m.host = at::empty({0}, options);
            m.host.set_(s.host.storage(), offset, t.sizes(), t.strides());
        }
        // The same conj/neg bits: the CPU kernel sees what it would see for
        // CPU tensors at this point of the dispatch.
        m.host.unsafeGetTensorImpl()->_set_conj(t.is_conj());
        m.host.unsafeGetTensorImpl()->_set_neg(t.is_neg());
        m.sizes = m.host.sizes().vec();
        m.strides = m.host.strides().vec();
        m.offset = m.host.storage_offset();
        m.data = m.host.storage().data();
        by_impl_.emplace(t.unsafeGetTensorImpl(), tensors_.size());
        host_impls_.emplace(m.host.unsafeGetTensorImpl(), tensors_.size());
        tensors_.push_back(std::move(m));
        return tensors_.back().host;
    }

    bool reshaped(const MirroredTensor& m) const {
        return m.host.sizes() != at::IntArrayRef(m.sizes) || m.host.strides() != at::IntArrayRef(m.strides) ||
               m.host.storage_offset() != m.offset || m.host.storage().data() != m.data;
    }

    void write_back() {
        // A storage not downloaded holds only what the kernel wrote: if it
        // resized its out= tensor, that tensor alone is written back (below).
        std::vector<bool> resized(storages_.size(), false);
        for (const MirroredTensor& m : tensors_)
            if (m.storage >= 0 && reshaped(m)) resized[static_cast<std::size_t>(m.storage)] = true;
        for (std::size_t i = 0; i < storages_.size(); ++i) {
            MirroredStorage& s = storages_[i];
            if (s.out_only && resized[i]) continue;
            const std::uint64_t bytes = s.hi - s.lo;
            // A host tensor resized in place may have moved the mirror's
            // bytes; its StorageImpl is still the mirror's.
            const auto* now = static_cast<const std::byte*>(s.host.storage().data());
            if (s.host.storage().nbytes() < bytes) continue;  // shrunk by set_: rewritten per tensor below
            if (!s.declared_written) {
                // What the kernel saw: the device's bytes themselves where
                // the host may read them (the stream passed the download;
                // nothing of this operator has been enqueued since).
                const std::byte* before =
                    s.compare_with_device ? reinterpret_cast<const std::byte*>(s.keel.data()) + s.lo
                                          : snapshot_ + s.before;
                if (std::memcmp(now, before, bytes) == 0) continue;
            }
            const TorchDevice& device = torch_device(s.device);
            const keel::DeviceView to(device.device(), reinterpret_cast<std::uintptr_t>(s.keel.data()) + s.lo, bytes);
            unwrap(unwrap(device.current_stream())->copy(to, std::span<const std::byte>(now, bytes)));
            counters().bytes_up += bytes;
        }
        // A tensor whose shape or storage the kernel changed (out= resized,
        // set_): the keel tensor takes the shape and the values.
        for (MirroredTensor& m : tensors_) {
            if (!reshaped(m)) continue;
            const c10::DeviceGuard guard(m.keel.device());
            m.keel.resize_(m.host.sizes());
            if (m.host.numel() > 0) copy_between(m.keel, m.host, false);
        }
    }

    c10::IValue output(const c10::IValue& value) {
        if (value.isTensor()) return to_keel(value.toTensor());
        if (value.isTensorList()) {
            c10::List<at::Tensor> list;
            list.reserve(value.toTensorList().size());
            for (const at::Tensor& t : value.toTensorList()) list.push_back(to_keel(t));
            return list;
        }
        if (value.isList()) {
            const c10::List<c10::IValue> original = value.toList();
            c10::impl::GenericList list(original.elementType());
            for (const c10::IValue& element : original)
                list.push_back(element.isTensor() ? c10::IValue(to_keel(element.toTensor())) : element);
            return list;
        }
        return value;
    }

    at::Tensor to_keel(const at::Tensor& t) {
        if (!t.defined() || !t.device().is_cpu()) return t;
        if (const auto found = host_impls_.find(t.unsafeGetTensorImpl()); found != host_impls_.end())
            return tensors_[found->second].keel;  // in place or out=: the argument itself
        TORCH_CHECK(device_.has_value(), "[keel_torch] the CPU fallback of ", op_.schema().operator_name(),
                    " has no keel tensor or device argument to put its outputs on");
        for (const MirroredStorage& s : storages_) {
            if (t.storage().unsafeGetStorageImpl() != s.host.storage().unsafeGetStorageImpl()) continue;
            if (s.host.storage().data() != t.storage().data()) break;  // the mirror moved: a copy is all we can give
            // A view of an argument: the same view of its keel storage.
            const auto item = static_cast<std::uint64_t>(t.element_size());
            at::Tensor view = at::detail::make_tensor<c10::TensorImpl>(
                c10::Storage(s.keel), c10::DispatchKeySet(c10::DispatchKey::PrivateUse1), t.dtype());
            view.unsafeGetTensorImpl()->set_sizes_and_strides(t.sizes(), t.strides());
            view.unsafeGetTensorImpl()->set_storage_offset(
                static_cast<std::int64_t>((static_cast<std::uint64_t>(t.storage_offset()) * item + s.lo) / item));
            view.unsafeGetTensorImpl()->_set_conj(t.is_conj());
            view.unsafeGetTensorImpl()->_set_neg(t.is_neg());
            return view;
        }
        return upload_output(t, *device_);
    }

    const c10::OperatorHandle& op_;
    c10::optional<c10::Device> device_;
    std::optional<DeviceUse> use_;
    c10::optional<c10::Device> host_mixed_;
    std::vector<MirroredStorage> storages_;
    std::unordered_map<c10::StorageImpl*, int> storage_index_;
    std::unordered_map<c10::TensorImpl*, int> mirrored_;  // keel tensor -> storage index (-1: none)
    std::vector<MirroredTensor> tensors_;
    std::unordered_map<c10::TensorImpl*, std::size_t> by_impl_;     // keel tensor -> tensors_
    std::unordered_map<c10::TensorImpl*, std::size_t> host_impls_;  // host tensor -> tensors_
    std::byte* snapshot_ = nullptr;       // the thread's kept buffer, or own_snapshot_
    bool* release_kept_ = nullptr;        // set while this mirror holds the kept buffer
    std::vector<std::byte> own_snapshot_;
};

}  // namespace

at::Tensor upload_output(const at::Tensor& host_tensor, c10::Device device) {
    const at::Tensor t = host_tensor.resolve_conj().resolve_neg();
    const c10::DeviceGuard guard(device);
    const bool dense = t.is_non_overlapping_and_dense();
    at::Tensor out = dense ? at::empty_strided(t.sizes(), t.strides(), t.options().device(device))
                           : at::empty(t.sizes(), t.options().device(device));
    if (t.numel() == 0) return out;
    if (dense) {
        // The same strides: the bytes it spans, as they are.
        const std::span<const std::byte> bytes(static_cast<const std::byte*>(t.data_ptr()), t.nbytes());
        unwrap(current_keel_stream(device.index()).copy(view_of(out), bytes));
        counters().bytes_up += bytes.size();
        return out;
    }
    copy_between(out, t, false);
    return out;
}

void run_on_host(const c10::OperatorHandle& op, torch::jit::Stack* stack,
                 const std::function<void(torch::jit::Stack*)>& cpu_kernel) {
    note(op);
    Counters& c = counters();
    auto start = std::chrono::steady_clock::now();
    Mirror mirror(op);
    mirror.to_host(*stack, op.schema().arguments().size());
    c.download_ns += since(start);
    start = std::chrono::steady_clock::now();
    cpu_kernel(stack);
    c.kernel_ns += since(start);
    start = std::chrono::steady_clock::now();
    mirror.from_host(*stack, op.schema().returns().size());
    c.write_back_ns += since(start);
    c.calls += 1;
}

std::vector<std::pair<std::string, std::int64_t>> fallback_counters() {
    const Counters& c = counters();
    return {{"calls", c.calls}, {"bytes_down", c.bytes_down}, {"bytes_up", c.bytes_up},
            {"download_ns", c.download_ns}, {"kernel_ns", c.kernel_ns}, {"write_back_ns", c.write_back_ns}};
}

void reset_fallback_counters() {
    Counters& c = counters();
    c.calls = c.bytes_down = c.bytes_up = c.download_ns = c.kernel_ns = c.write_back_ns = 0;
}

void cpu_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
    run_on_host(op, stack, [&](torch::jit::Stack* s) {
        op.redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::CPU), s);
    });
}

namespace {

// A view (or an alias) of an argument: a return that aliases without writing.
bool returns_alias(const c10::FunctionSchema& schema) {
    for (const c10::Argument& r : schema.returns())
        if (r.alias_info() && !r.alias_info()->isWrite()) return true;
    return false;
}

}  // namespace

std::vector<std::string> route_cpu_kernels() {
    static std::mutex mutex;
    static std::unique_ptr<torch::Library> library;
    static std::vector<std::string> routed;
    std::lock_guard lock(mutex);
    if (library) return routed;
    library = std::make_unique<torch::Library>(torch::Library::IMPL, "aten", c10::DispatchKey::PrivateUse1,
                                               __FILE__, __LINE__);
    c10::Dispatcher& dispatcher = c10::Dispatcher::singleton();
    for (const c10::OperatorName& name : dispatcher.getAllOpNames()) {
        if (name.name.rfind("aten::", 0) != 0) continue;
        const c10::optional<c10::OperatorHandle> op = dispatcher.findOp(name);
        if (!op || !op->hasKernelForDispatchKey(c10::DispatchKey::CPU) ||
            !op->hasKernelForDispatchKey(c10::DispatchKey::CompositeExplicitAutograd) ||
            op->hasKernelForDispatchKey(c10::DispatchKey::PrivateUse1) || returns_alias(op->schema()))
            continue;
        std::string short_name = name.name.substr(6);
        if (!name.overload_name.empty()) short_name += "." + name.overload_name;
        library->impl(short_name.c_str(), torch::CppFunction::makeFromBoxedFunction<&cpu_fallback>());
        routed.push_back(name.name + (name.overload_name.empty() ? "" : "." + name.overload_name));
    }
    std::sort(routed.begin(), routed.end());
    return routed;
}

std::vector<std::string> fallback_inventory() {
    Inventory& inv = inventory();
    std::lock_guard lock(inv.mutex);
    return {inv.names.begin(), inv.names.end()};
}

void reset_fallback_inventory() {
    Inventory& inv = inventory();
    std::lock_guard lock(inv.mutex);
    inv.names.clear();
}

}  // namespace keel_torch
