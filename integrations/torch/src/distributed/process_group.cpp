#include "process_group.hpp"

#include "device_access.hpp"
#include "reduce_types.hpp"
#include "store_bridge.hpp"
#include "work.hpp"
#include "../errors.hpp"

#include <ATen/ATen.h>
#include <c10/core/DeviceGuard.h>
#include <c10/core/StreamGuard.h>
#include <c10/core/impl/VirtualGuardImpl.h>

#include <string>

namespace keel_torch {
namespace {

using c10d::OpType;

constexpr c10::DeviceType kKeel = c10::DeviceType::PrivateUse1;

void check_tensor(const at::Tensor& t, const char* where, bool contiguous = true) {
    TORCH_CHECK(t.defined(), "[", where, "] got an undefined tensor");
    TORCH_CHECK(t.device().type() == kKeel, "[", where,
                "] the keel backend communicates tensors on keel devices (privateuseone); got a tensor on ",
                t.device(), " (use the gloo backend for CPU tensors)");
    TORCH_CHECK(t.layout() == at::kStrided, "[", where, "] the keel backend takes dense tensors, got ", t.layout());
    // The bytes of a conj or neg view are not its values: sending them would
    // deliver wrong data.
    TORCH_CHECK(!t.is_conj() && !t.is_neg(), "[", where,
                "] the tensor is a conjugate or negative view; resolve it first (resolve_conj(), resolve_neg())");
    if (contiguous) TORCH_CHECK(t.is_contiguous(), "[", where, "] the keel backend needs contiguous tensors");
}

const at::Tensor& single(const std::vector<at::Tensor>& tensors, const char* where) {
    TORCH_CHECK(tensors.size() == 1, "[", where,
                "] the keel backend takes one tensor per process (one device per rank), got ", tensors.size());
    check_tensor(tensors[0], where);
    return tensors[0];
}

void check_like(const at::Tensor& t, const at::Tensor& like, std::int64_t numel, const char* where) {
    check_tensor(t, where, false);
    TORCH_CHECK(t.device() == like.device(), "[", where, "] tensors on ", t.device(), " and ", like.device(),
                ": the keel backend takes one device per operation");
    TORCH_CHECK(t.scalar_type() == like.scalar_type(), "[", where, "] tensors of ", t.scalar_type(), " and ",
                like.scalar_type(), ": the dtypes must match");
    TORCH_CHECK(t.numel() == numel, "[", where, "] a tensor of ", t.numel(), " elements where ", numel,
                " are expected");
}

keel::DeviceView view_of(const at::Tensor& t) {
    shared::check_data_known(t.storage());
    return {shared::keel_device(t.device().index()), reinterpret_cast<std::uintptr_t>(t.data_ptr()),
            static_cast<std::uint64_t>(t.numel()) * t.element_size()};
}

}  // namespace

int ProcessGroupKeel::check_root(std::int64_t root, const char* where) const {
    TORCH_CHECK(root >= 0 && root < size_, "[", where, "] root rank ", root, " is not a rank of 0..", size_ - 1);
    return static_cast<int>(root);
}

namespace {

keel::Store store_of(const c10::intrusive_ptr<c10d::Store>& store) { return unwrap(keel_store_of(store)); }

}  // namespace

ProcessGroupKeel::ProcessGroupKeel(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                                   std::chrono::milliseconds timeout)
    : c10d::ProcessGroup(rank, size), store_(store_of(store)), timeout_(timeout) {
    TORCH_CHECK(timeout.count() > 0, "[ProcessGroupKeel] the timeout must be positive");
    init();
}

// The communicators wait for the operations they enqueued, then leave.
ProcessGroupKeel::~ProcessGroupKeel() = default;

const ProcessGroupKeel::Channel& ProcessGroupKeel::channel(c10::DeviceIndex device) {
    std::lock_guard<std::mutex> lock(mutex_);
    last_device_ = device;
    if (auto found = channels_.find(device); found != channels_.end()) return *found->second;
    keel::CommOptions options;
    options.timeout = timeout_;
    // The store is this group's own (c10d prefixes it per group); counting
    // the group's communicators names them the same on every rank.
    options.key_prefix = "keel_torch/comm/" + std::to_string(channels_.size());
    auto comm = std::make_shared<const keel::Communicator>(
        unwrap(keel::Communicator::create(shared::keel_device(device), store_, rank_, size_, options)));
    const c10::Stream stream = shared::new_stream(device);
    // On the generic engine a failed operation must fail its stream, or its
    // waiters would go on over data it never produced.
    TORCH_CHECK(comm->uses_native_engine() || shared::keel_stream(stream).host_funcs_can_fail(),
                "[ProcessGroupKeel] ", shared::keel_device(device).name(),
                "'s plugin cannot fail a stream from a host function (keel.h 1.4), so a failed collective "
                "could not reach the streams that wait for it; the keel backend refuses this device");
    auto made = std::make_unique<Channel>(Channel{stream, std::move(comm)});
    return *channels_.emplace(device, std::move(made)).first->second;
}

namespace {

constexpr const char* kWayOn =
    "\n[ProcessGroupKeel] this group failed and stays failed (its peers saw the failure too): after "
    "keel_torch.recover(), make a new group on every rank (dist.new_group(backend=\"keel\"); on PyTorch 1.13, "
    "destroy_process_group() then init_process_group() can hang while another group holds the store)";

std::string keel_error_text(const keel::Error& error) {
    return std::string("keel ") + keel::status_name(error.code()) + ": " + error.message();
}

std::string exception_text(const std::exception& e) {
    if (const auto* c10_error = dynamic_cast<const c10::Error*>(&e)) return c10_error->what_without_backtrace();
    return e.what();
}

}  // namespace

void ProcessGroupKeel::check_not_failed(const Channel& ch) {
    std::string failure;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        failure = failure_;
    }
    if (failure.empty()) {
        keel::Result<void> failed = ch.comm->error();
        if (failed.ok()) return;
        fail_group(keel_error_text(failed.error()));
        std::lock_guard<std::mutex> lock(mutex_);
        failure = failure_;
    }
    TORCH_CHECK(false, failure, kWayOn);
}

void ProcessGroupKeel::fail_group(const std::string& what) {
    std::vector<std::shared_ptr<const keel::Communicator>> comms;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        if (failure_.empty()) failure_ = what;
        for (const auto& [device, ch] : channels_) comms.push_back(ch->comm);
    }
    for (const auto& comm : comms) comm->abort();
}

template <class Enqueue>
c10::intrusive_ptr<c10d::Work> ProcessGroupKeel::run(OpType type, c10::DeviceIndex device,
                                                     const std::vector<at::Tensor>& uses,
                                                     std::vector<at::Tensor> outputs, Enqueue&& enqueue,
                                                     bool host_blocking) {
    const Channel& ch = channel(device);
    const shared::DeviceHold hold(device);
    check_not_failed(ch);
    // From here on the peers may have enqueued their side of this
    // operation: whatever keeps this rank from enqueuing its side fails the
    // group on every rank, or the peers would wait for it until the timeout
    // and their next operations would pair with the wrong ones.
    try {
        const c10::impl::VirtualGuardImpl guard(kKeel);
        const keel::Stream& current = shared::keel_stream(guard.getStream(c10::Device(kKeel, device)));
        // A stream known to have failed never produced this operation's
        // input: raise now instead of when its result is read.
        if (keel::Result<bool> before = current.query(); !before.ok())
            TORCH_CHECK(false, keel_error_text(before.error()),
                        "\n[ProcessGroupKeel] the current stream had failed before this operation: its input "
                        "was never produced");
        const keel::Stream& stream = shared::keel_stream(ch.stream);
        unwrap(stream.order_after(current));
        for (const at::Tensor& t : uses)
            if (t.has_storage()) guard.recordDataPtrOnStream(t.storage().data_ptr(), ch.stream);
        {
            // Temporaries are allocated, and copies run, on the channel's stream.
            const c10::StreamGuard on_channel(ch.stream);
            enqueue(stream, *ch.comm);
        }
        return c10::make_intrusive<KeelWork>(rank_, type, std::move(outputs), ch.stream, ch.comm, host_blocking);
    } catch (const std::exception& e) {
        const std::string what = exception_text(e);
        fail_group(what);
        TORCH_CHECK(false, what, kWayOn);
    }
}

c10::intrusive_ptr<c10d::Work> ProcessGroupKeel::broadcast(std::vector<at::Tensor>& tensors,
                                                           const c10d::BroadcastOptions& opts) {
    constexpr const char* where = "ProcessGroupKeel::broadcast";
    const at::Tensor& t = single(tensors, where);
    TORCH_CHECK(opts.rootTensor == 0, "[", where, "] rootTensor ", opts.rootTensor, " of one tensor");
    const int root = static_cast<int>(opts.rootRank);
    return run(OpType::BROADCAST, t.device().index(), {t}, {t},
               [&](const keel::Stream& s, const keel::Communicator& c) { unwrap(c.broadcast(s, view_of(t), root)); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupKeel::allreduce(std::vector<at::Tensor>& tensors,
                                                           const c10d::AllreduceOptions& opts) {
    constexpr const char* where = "ProcessGroupKeel::allreduce";
    const at::Tensor& t = single(tensors, where);
    const Reduction r = reduction_of(opts.reduceOp, t.scalar_type(), where);
    return run(OpType::ALLREDUCE, t.device().index(), {t}, {t},
               [&](const keel::Stream& s, const keel::Communicator& c) {
                   unwrap(c.all_reduce(s, view_of(t), r.dtype, r.op));
               });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupKeel::allreduce_coalesced(std::vector<at::Tensor>& tensors,
                                                                     const c10d::AllreduceCoalescedOptions& opts) {
    constexpr const char* where = "ProcessGroupKeel::allreduce_coalesced";
    TORCH_CHECK(!tensors.empty(), "[", where, "] no tensors");
    std::vector<Reduction> reductions;
    for (const at::Tensor& t : tensors) {
        check_tensor(t, where);
        TORCH_CHECK(t.device() == tensors[0].device(), "[", where, "] tensors on ", t.device(), " and ",
                    tensors[0].device(), ": the keel backend takes one device per operation");
        reductions.push_back(reduction_of(opts.reduceOp, t.scalar_type(), where));
    }
    return run(OpType::ALLREDUCE_COALESCED, tensors[0].device().index(), tensors, tensors,
               [&](const keel::Stream& s, const keel::Communicator& c) {
                   for (std::size_t i = 0; i < tensors.size(); ++i)
                       unwrap(c.all_reduce(s, view_of(tensors[i]), reductions[i].dtype, reductions[i].op));
               });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupKeel::allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                                           std::vector<at::Tensor>& inputs,
                                                           const c10d::AllgatherOptions&) {
    constexpr const char* where = "ProcessGroupKeel::allgather";
    const at::Tensor& in = single(inputs, where);
    TORCH_CHECK(outputs.size() == 1, "[", where, "] one list of outputs per process, got ", outputs.size());
    std::vector<at::Tensor>& outs = outputs[0];
    TORCH_CHECK(static_cast<int>(outs.size()) == size_, "[", where, "] ", size_, " output tensors expected, got ",
                outs.size());
    const std::int64_t n = in.numel();
    for (const at::Tensor& o : outs) check_like(o, in, n, where);
    std::vector<at::Tensor> uses = outs;
    uses.push_back(in);
    return run(OpType::ALLGATHER, in.device().index(), uses, outs,
               [&](const keel::Stream& s, const keel::Communicator& c) {
                   const at::Tensor flat = at::empty({size_ * n}, in.options());
                   unwrap(c.all_gather(s, view_of(in), view_of(flat)));
                   for (int i = 0; i < size_; ++i) outs[i].copy_(flat.narrow(0, i * n, n).view(outs[i].sizes()));
               });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupKeel::_allgather_base(at::Tensor& output, at::Tensor& input,
                                                                 const c10d::AllgatherOptions&) {
    constexpr const char* where = "ProcessGroupKeel::_allgather_base";
    check_tensor(input, where);
    check_like(output, input, size_ * input.numel(), where);
    check_tensor(output, where);
    return run(OpType::_ALLGATHER_BASE, input.device().index(), {input, output}, {output},
               [&](const keel::Stream& s, const keel::Communicator& c) {
                   unwrap(c.all_gather(s, view_of(input), view_of(output)));
               });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupKeel::reduce_scatter(std::vector<at::Tensor>& outputs,
                                                                std::vector<std::vector<at::Tensor>>& inputs,
                                                                const c10d::ReduceScatterOptions& opts) {
    constexpr const char* where = "ProcessGroupKeel::reduce_scatter";
    const at::Tensor& out = single(outputs, where);
    TORCH_CHECK(inputs.size() == 1, "[", where, "] one list of inputs per process, got ", inputs.size());
    std::vector<at::Tensor>& ins = inputs[0];
    TORCH_CHECK(static_cast<int>(ins.size()) == size_, "[", where, "] ", size_, " input tensors expected, got ",
                ins.size());
    const std::int64_t n = out.numel();
    for (const at::Tensor& i : ins) check_like(i, out, n, where);
    const Reduction r = reduction_of(opts.reduceOp, out.scalar_type(), where);
    std::vector<at::Tensor> uses = ins;
    uses.push_back(out);
    return run(OpType::REDUCE_SCATTER, out.device().index(), uses, {out},
               [&](const keel::Stream& s, const keel::Communicator& c) {
                   const at::Tensor flat = at::empty({size_ * n}, out.options());
                   for (int i = 0; i < size_; ++i) flat.narrow(0, i * n, n).copy_(ins[i].reshape({n}));
                   unwrap(c.reduce_scatter(s, view_of(flat), view_of(out), r.dtype, r.op));
               });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupKeel::_reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                                                      const c10d::ReduceScatterOptions& opts) {
    constexpr const char* where = "ProcessGroupKeel::_reduce_scatter_base";
    check_tensor(output, where);
    check_like(input, output, size_ * output.numel(), where);
    check_tensor(input, where);
    const Reduction r = reduction_of(opts.reduceOp, output.scalar_type(), where);
    return run(OpType::_REDUCE_SCATTER_BASE, output.device().index(), {input, output}, {output},
               [&](const keel::Stream& s, const keel::Communicator& c) {
                   unwrap(c.reduce_scatter(s, view_of(input), view_of(output), r.dtype, r.op));
               });
}

// Tags are not matched (as with NCCL): per pair of ranks, messages match in
// the order they were enqueued.
c10::intrusive_ptr<c10d::Work> ProcessGroupKeel::send(std::vector<at::Tensor>& tensors, int dst, int) {
    const at::Tensor& t = single(tensors, "ProcessGroupKeel::send");
    return run(OpType::SEND, t.device().index(), {t}, {t},
               [&](const keel::Stream& s, const keel::Communicator& c) { unwrap(c.send(s, view_of(t), dst)); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupKeel::recv(std::vector<at::Tensor>& tensors, int src, int) {
    const at::Tensor& t = single(tensors, "ProcessGroupKeel::recv");
    return run(OpType::RECV, t.device().index(), {t}, {t},
               [&](const keel::Stream& s, const keel::Communicator& c) { unwrap(c.recv(s, view_of(t), src)); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupKeel::reduce(std::vector<at::Tensor>& tensors,
                                                        const c10d::ReduceOptions& opts) {
    constexpr const char* where = "ProcessGroupKeel::reduce";
    const at::Tensor& t = single(tensors, where);
    TORCH_CHECK(opts.rootTensor == 0, "[", where, "] rootTensor ", opts.rootTensor, " of one tensor");
    const int root = check_root(opts.rootRank, where);
    const Reduction r = reduction_of(opts.reduceOp, t.scalar_type(), where);
    // In place on the root (as NCCL's): its tensor becomes the reduction; the
    // others' are left as they were.
    return run(OpType::REDUCE, t.device().index(), {t}, {t},
               [&](const keel::Stream& s, const keel::Communicator& c) {
                   const keel::DeviceView v = view_of(t);
                   unwrap(c.reduce(s, v, rank_ == root ? v : keel::DeviceView(), r.dtype, r.op, root));
               });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupKeel::gather(std::vector<std::vector<at::Tensor>>& outputs,
                                                        std::vector<at::Tensor>& inputs,
                                                        const c10d::GatherOptions& opts) {
    constexpr const char* where = "ProcessGroupKeel::gather";
    const at::Tensor& in = single(inputs, where);
    const int root = check_root(opts.rootRank, where);
    const std::int64_t n = in.numel();
    std::vector<at::Tensor> outs;
    if (rank_ == root) {
        TORCH_CHECK(outputs.size() == 1, "[", where, "] the root takes one list of outputs, got ", outputs.size());
        outs = outputs[0];
        TORCH_CHECK(static_cast<int>(outs.size()) == size_, "[", where, "] ", size_,
                    " output tensors expected on the root, got ", outs.size());
        for (const at::Tensor& o : outs) check_like(o, in, n, where);
    } else {
        TORCH_CHECK(outputs.empty() || (outputs.size() == 1 && outputs[0].empty()), "[", where,
                    "] only the root (rank ", root, ") takes output tensors");
    }
    std::vector<at::Tensor> uses = outs;
    uses.push_back(in);
    return run(OpType::GATHER, in.device().index(), uses, outs,
               [&](const keel::Stream& s, const keel::Communicator& c) {
                   if (rank_ != root) {
                       unwrap(c.gather(s, view_of(in), keel::DeviceView(), root));
                       return;
                   }
                   const at::Tensor flat = at::empty({size_ * n}, in.options());
                   unwrap(c.gather(s, view_of(in), view_of(flat), root));
                   for (int i = 0; i < size_; ++i) outs[i].copy_(flat.narrow(0, i * n, n).view(outs[i].sizes()));
               });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupKeel::scatter(std::vector<at::Tensor>& outputs,
                                                         std::vector<std::vector<at::Tensor>>& inputs,
                                                         const c10d::ScatterOptions& opts) {
    constexpr const char* where = "ProcessGroupKeel::scatter";
    const at::Tensor& out = single(outputs, where);
    const int root = check_root(opts.rootRank, where);
    const std::int64_t n = out.numel();
    std::vector<at::Tensor> ins;
    if (rank_ == root) {
        TORCH_CHECK(inputs.size() == 1, "[", where, "] the root takes one list of inputs, got ", inputs.size());
        ins = inputs[0];
        TORCH_CHECK(static_cast<int>(ins.size()) == size_, "[", where, "] ", size_,
                    " input tensors expected on the root, got ", ins.size());
        for (const at::Tensor& i : ins) check_like(i, out, n, where);
    } else {
        TORCH_CHECK(inputs.empty() || (inputs.size() == 1 && inputs[0].empty()), "[", where,
                    "] only the root (rank ", root, ") takes input tensors");
    }
    std::vector<at::Tensor> uses = ins;
    uses.push_back(out);
    return run(OpType::SCATTER, out.device().index(), uses, {out},
               [&](const keel::Stream& s, const keel::Communicator& c) {
                   if (rank_ != root) {
                       unwrap(c.scatter(s, keel::DeviceView(), view_of(out), root));
                       return;
                   }
                   const at::Tensor flat = at::empty({size_ * n}, out.options());
                   for (int i = 0; i < size_; ++i) flat.narrow(0, i * n, n).copy_(ins[i].reshape({n}));
                   unwrap(c.scatter(s, view_of(flat), view_of(out), root));
               });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupKeel::alltoall_base(at::Tensor& output, at::Tensor& input,
                                                               std::vector<std::int64_t>& output_splits,
                                                               std::vector<std::int64_t>& input_splits,
                                                               const c10d::AllToAllOptions&) {
    constexpr const char* where = "ProcessGroupKeel::alltoall_base";
    check_tensor(input, where);
    check_tensor(output, where);
    TORCH_CHECK(output.device() == input.device(), "[", where, "] tensors on ", output.device(), " and ",
                input.device(), ": the keel backend takes one device per operation");
    TORCH_CHECK(output.scalar_type() == input.scalar_type(), "[", where, "] tensors of ", output.scalar_type(),
                " and ", input.scalar_type(), ": the dtypes must match");
    // Splits count rows (the first dimension); none: equal parts.
    const auto bytes_per_row = [&](const at::Tensor& t) {
        return t.dim() == 0 ? std::uint64_t{0} : static_cast<std::uint64_t>(t.numel() / std::max<std::int64_t>(t.size(0), 1)) * t.element_size();
    };
    const auto sizes_of = [&](const at::Tensor& t, const std::vector<std::int64_t>& splits, const char* which) {
        TORCH_CHECK(t.dim() > 0, "[", where, "] the ", which, " tensor has no first dimension to split");
        std::vector<std::uint64_t> sizes;
        if (splits.empty()) {
            TORCH_CHECK(t.size(0) % size_ == 0, "[", where, "] the ", which, " tensor's first dimension (",
                        t.size(0), ") does not split into ", size_, " equal parts");
            sizes.assign(static_cast<std::size_t>(size_), static_cast<std::uint64_t>(t.size(0) / size_) * bytes_per_row(t));
            return sizes;
        }
        TORCH_CHECK(static_cast<int>(splits.size()) == size_, "[", where, "] ", splits.size(), " ", which,
                    " split sizes, expected one per rank (", size_, ")");
        std::int64_t rows = 0;
        for (const std::int64_t split : splits) {
            TORCH_CHECK(split >= 0, "[", where, "] a negative ", which, " split size (", split, ")");
            rows += split;
            sizes.push_back(static_cast<std::uint64_t>(split) * bytes_per_row(t));
        }
        TORCH_CHECK(rows == t.size(0), "[", where, "] the ", which, " split sizes add up to ", rows,
                    " rows, the tensor has ", t.size(0));
        return sizes;
    };
    const std::vector<std::uint64_t> in_sizes = sizes_of(input, input_splits, "input");
    const std::vector<std::uint64_t> out_sizes = sizes_of(output, output_splits, "output");
    TORCH_CHECK(bytes_per_row(input) == bytes_per_row(output), "[", where,
                "] the input's and the output's rows differ in size");
    return run(OpType::ALLTOALL_BASE, input.device().index(), {input, output}, {output},
               [&](const keel::Stream& s, const keel::Communicator& c) {
                   // In place, or overlapping: the input goes through a temporary.
                   const at::Tensor in = output.is_alias_of(input) ? input.clone() : input;
                   unwrap(c.all_to_all(s, view_of(in), in_sizes, view_of(output), out_sizes));
               });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupKeel::alltoall(std::vector<at::Tensor>& outputs,
                                                          std::vector<at::Tensor>& inputs,
                                                          const c10d::AllToAllOptions&) {
    constexpr const char* where = "ProcessGroupKeel::alltoall";
    TORCH_CHECK(static_cast<int>(inputs.size()) == size_ && static_cast<int>(outputs.size()) == size_, "[", where,
                "] ", size_, " input and output tensors expected, got ", inputs.size(), " and ", outputs.size());
    for (const at::Tensor& t : inputs) check_like(t, inputs[0], t.numel(), where);
    for (const at::Tensor& t : outputs) check_like(t, inputs[0], t.numel(), where);
    std::vector<std::uint64_t> in_sizes, out_sizes;
    std::int64_t in_total = 0, out_total = 0;
    for (int r = 0; r < size_; ++r) {
        in_sizes.push_back(static_cast<std::uint64_t>(inputs[r].numel()) * inputs[r].element_size());
        out_sizes.push_back(static_cast<std::uint64_t>(outputs[r].numel()) * outputs[r].element_size());
        in_total += inputs[r].numel();
        out_total += outputs[r].numel();
    }
    std::vector<at::Tensor> uses = inputs;
    uses.insert(uses.end(), outputs.begin(), outputs.end());
    return run(OpType::ALLTOALL, inputs[0].device().index(), uses, outputs,
               [&](const keel::Stream& s, const keel::Communicator& c) {
                   const at::TensorOptions options = inputs[0].options();
                   const at::Tensor flat_in = at::empty({std::max<std::int64_t>(in_total, 1)}, options);
                   const at::Tensor flat_out = at::empty({std::max<std::int64_t>(out_total, 1)}, options);
                   std::int64_t offset = 0;
                   for (const at::Tensor& t : inputs) {
                       if (t.numel() > 0) flat_in.narrow(0, offset, t.numel()).copy_(t.reshape({t.numel()}));
                       offset += t.numel();
                   }
                   unwrap(c.all_to_all(s, view_of(flat_in), in_sizes, view_of(flat_out), out_sizes));
                   offset = 0;
                   for (const at::Tensor& t : outputs) {
                       if (t.numel() > 0) t.copy_(flat_out.narrow(0, offset, t.numel()).view(t.sizes()));
                       offset += t.numel();
                   }
               });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupKeel::barrier(const c10d::BarrierOptions& opts) {
    c10::DeviceIndex device = -1;
    if (!opts.device_ids.empty()) {
        device = static_cast<c10::DeviceIndex>(opts.device_ids.front());
    } else {
        std::lock_guard<std::mutex> lock(mutex_);
        device = last_device_;
    }
    if (device < 0) device = c10::impl::VirtualGuardImpl(kKeel).getDevice().index();
    at::Tensor token;
    {
        const c10::DeviceGuard on_device(c10::Device(kKeel, device));
        token = at::empty({1}, at::TensorOptions().dtype(at::kByte).device(kKeel, device));
    }
    return run(OpType::BARRIER, device, {token}, {token},
               [&](const keel::Stream& s, const keel::Communicator& c) {
                   unwrap(s.memset(view_of(token), 0));
                   unwrap(c.all_reduce(s, view_of(token), KEEL_DTYPE_U8, keel::ReduceOp::max));
               },
               /*host_blocking=*/true);
}

}  // namespace keel_torch
