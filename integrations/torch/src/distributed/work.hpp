// The c10d Work of one operation of the keel process group, with NCCL's
// semantics: the operation runs on the group's communication stream after
// the work the caller's current stream had enqueued; wait() orders the
// caller's current stream after it on the device (the host does not block,
// except for barrier); getFuture() is a device-aware Future of the outputs.
#pragma once

#include <keel/comm.hpp>
#include <keel/keel.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <memory>
#include <vector>

namespace keel_torch {

class KeelWork final : public c10d::Work {
public:
    // Call right after the operation was enqueued on `stream` (the current
    // stream of its device at the call): records the completion event and
    // completes the Future there. Throws c10::Error if keel cannot.
    KeelWork(int rank, c10d::OpType type, std::vector<at::Tensor> outputs, c10::Stream stream,
             std::shared_ptr<const keel::Communicator> comm, bool host_blocking);

    // True once the operation ran or failed (query, never blocks).
    bool isCompleted() override;
    bool isSuccess() const override;
    std::exception_ptr exception() const override;
    std::vector<at::Tensor> result() override;
    // Both: the calling thread's current stream of the device runs its
    // later work after the operation (barrier: the host waits too). A
    // failure already known is thrown here; one that comes later fails
    // that stream (keel.h 1.3's error propagation), so reading the outputs
    // raises it, never returns data the operation did not produce. The
    // timeout of wait() is not used (as NCCL's without blocking wait): the
    // group's timeout bounds the operation itself.
    void synchronize() override;
    bool wait(std::chrono::milliseconds timeout = kNoTimeout) override;
    // Aborts the communicator: this and every later operation of the group fail.
    void abort() override;
    c10::intrusive_ptr<c10::ivalue::Future> getFuture() override;

private:
    void order_current_stream();
    // The error the event or the communicator reports, kept as exception_.
    void take_error(const keel::Error& error);

    std::vector<at::Tensor> outputs_;
    c10::Device device_;
    std::shared_ptr<const keel::Communicator> comm_;
    bool host_blocking_;
    keel::Event done_;
    c10::intrusive_ptr<c10::ivalue::Future> future_;
};

}  // namespace keel_torch
