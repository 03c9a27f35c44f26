// torch.distributed's backend "keel": a c10d ProcessGroup over
// keel::Communicator, for tensors on keel devices (privateuseone).
//
// Each operation runs on the group's communication stream of the tensors'
// device, after the work the calling thread's current stream enqueued so
// far (a device-side wait; the host does not block), and returns a KeelWork
// (NCCL's semantics, work.hpp). The tensors are recorded on that stream, so
// memory freed before the operation ran is not reused under it.
//
// One communicator per device the group has used, made at the first
// operation on that device (collective: every rank must use its devices in
// the same order, as with NCCL). Operations fail with a c10::Error (Python
// RuntimeError) for bad input, before anything is enqueued; an operation
// that fails while it runs (a peer gone, the timeout) fails its stream and
// every stream that waits for it, and every later operation of the group.
// So does an operation this rank could not hand to its communicator once the
// peers may have theirs (the current stream failed before it, a refused
// fence or event, a temporary that failed): the group is failed on every
// rank at once (the communicators are aborted), and every later operation
// raises the first failure until the user makes a new group.
//
// Sync: the operations may be called from several threads (their order is
// the order the calls return, and must be the same on every rank).
#pragma once

#include <keel/comm.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <chrono>
#include <map>
#include <memory>
#include <mutex>

namespace keel_torch {

class ProcessGroupKeel final : public c10d::ProcessGroup {
public:
    // `timeout` bounds meeting the peers and each operation once it runs.
    ProcessGroupKeel(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                     std::chrono::milliseconds timeout);
    ~ProcessGroupKeel() override;

    const std::string getBackendName() const override { return "keel"; }

    c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
                                             const c10d::BroadcastOptions& opts) override;
    c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                             const c10d::AllreduceOptions& opts) override;
    c10::intrusive_ptr<c10d::Work> allreduce_coalesced(std::vector<at::Tensor>& tensors,
                                                       const c10d::AllreduceCoalescedOptions& opts) override;
    c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                             std::vector<at::Tensor>& inputs,
                                             const c10d::AllgatherOptions& opts) override;
    c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& output, at::Tensor& input,
                                                   const c10d::AllgatherOptions& opts) override;
    c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor>& outputs,
                                                  std::vector<std::vector<at::Tensor>>& inputs,
                                                  const c10d::ReduceScatterOptions& opts) override;
    c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                                        const c10d::ReduceScatterOptions& opts) override;
    // reduce: in place on the root (its tensor becomes the result), as
    // NCCL's. gather/scatter: lists on the root only. alltoall_base: split
    // sizes count rows (the first dimension), none = equal parts; alltoall:
    // one tensor per rank each way (any sizes, one dtype).
    c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& tensors, const c10d::ReduceOptions& opts) override;
    c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>>& outputs,
                                          std::vector<at::Tensor>& inputs, const c10d::GatherOptions& opts) override;
    c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor>& outputs,
                                           std::vector<std::vector<at::Tensor>>& inputs,
                                           const c10d::ScatterOptions& opts) override;
    c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& output, at::Tensor& input,
                                                 std::vector<std::int64_t>& output_splits,
                                                 std::vector<std::int64_t>& input_splits,
                                                 const c10d::AllToAllOptions& opts) override;
    c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
                                            const c10d::AllToAllOptions& opts) override;
    c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors, int dst, int tag) override;
    c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors, int src, int tag) override;
    // An all-reduce of one byte on the device last used (or
    // opts.device_ids[0], else the current device); wait() blocks the host.
    c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& opts) override;

private:
    // A device's communicator and the stream its operations run on.
    struct Channel {
        c10::Stream stream;
        std::shared_ptr<const keel::Communicator> comm;
    };
    const Channel& channel(c10::DeviceIndex device);
    // root as a rank, or a c10::Error naming `where`.
    [[nodiscard]] int check_root(std::int64_t root, const char* where) const;

    // Throws the group's failure, if it has one (its own, or a
    // communicator's), naming it and the way on.
    void check_not_failed(const Channel& ch);
    // Keeps `what` as the group's failure (the first one stays) and aborts
    // every communicator of the group, so that the peers fail at once.
    void fail_group(const std::string& what);

    // Orders the channel's stream after the current one, records `uses` on
    // it, runs enqueue(stream, comm) with that stream current, and returns
    // the Work of `outputs`.
    template <class Enqueue>
    c10::intrusive_ptr<c10d::Work> run(c10d::OpType type, c10::DeviceIndex device,
                                       const std::vector<at::Tensor>& uses, std::vector<at::Tensor> outputs,
                                       Enqueue&& enqueue, bool host_blocking = false);

    keel::Store store_;
    std::chrono::milliseconds timeout_;
    std::mutex mutex_;
    std::map<c10::DeviceIndex, std::unique_ptr<Channel>> channels_;
    c10::DeviceIndex last_device_ = -1;
    std::string failure_;  // the first failure of the group; empty: none
};

}  // namespace keel_torch
