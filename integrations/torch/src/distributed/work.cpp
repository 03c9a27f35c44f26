#include "work.hpp"

#include "device_access.hpp"

#include <ATen/core/ivalue.h>
#include <ATen/core/jit_type.h>
#include <c10/core/StreamGuard.h>
#include <c10/core/impl/VirtualGuardImpl.h>

namespace keel_torch {
namespace {

[[noreturn]] void throw_keel(const keel::Error& error) {
    TORCH_CHECK(false, "keel ", keel::status_name(error.code()), ": ", error.message());
}

keel::Event make_event(const keel::Device& device) {
    keel::Result<keel::Event> event = keel::Event::create(device);
    if (!event.ok()) throw_keel(event.error());
    return std::move(event).value();
}

}  // namespace

KeelWork::KeelWork(int rank, c10d::OpType type, std::vector<at::Tensor> outputs, c10::Stream stream,
                   std::shared_ptr<const keel::Communicator> comm, bool host_blocking)
    : c10d::Work(rank, type),
      outputs_(std::move(outputs)),
      device_(stream.device()),
      comm_(std::move(comm)),
      host_blocking_(host_blocking),
      done_(make_event(shared::keel_device(stream.device_index()))) {
    if (keel::Result<void> recorded = done_.record(shared::keel_stream(stream)); !recorded.ok())
        throw_keel(recorded.error());
    // Completed now, as NCCL's: its events are recorded on the
    // communication stream, so Future.wait() and then() order the waiter's
    // current stream after the operation instead of blocking the host.
    future_ = c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()),
                                                       std::vector<c10::Device>{device_});
    c10::StreamGuard on_comm_stream(stream);
    future_->markCompleted(c10::IValue(outputs_));
}

void KeelWork::take_error(const keel::Error& error) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!exception_)
        exception_ = std::make_exception_ptr(
            c10::Error("keel " + std::string(keel::status_name(error.code())) + ": " + error.message(), ""));
    completed_ = true;
}

bool KeelWork::isCompleted() {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        if (completed_) return true;
    }
    keel::Result<bool> done = done_.query();
    if (!done.ok()) {
        take_error(done.error());
        return true;
    }
    if (!*done) return false;
    if (keel::Result<void> error = comm_->error(); !error.ok()) {
        take_error(error.error());
        return true;
    }
    std::lock_guard<std::mutex> lock(mutex_);
    completed_ = true;
    return true;
}

bool KeelWork::isSuccess() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return completed_ && !exception_;
}

std::exception_ptr KeelWork::exception() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return exception_;
}

std::vector<at::Tensor> KeelWork::result() { return outputs_; }

void KeelWork::order_current_stream() {
    if (keel::Result<void> error = comm_->error(); !error.ok()) take_error(error.error());
    if (std::exception_ptr failed = exception()) std::rethrow_exception(failed);
    const c10::impl::VirtualGuardImpl guard(c10::DeviceType::PrivateUse1);
    const keel::Stream& current = shared::keel_stream(guard.getStream(device_));
    if (keel::Result<void> waited = current.wait(done_); !waited.ok()) throw_keel(waited.error());
    if (host_blocking_) {
        if (keel::Result<void> synced = done_.synchronize(); !synced.ok()) {
            take_error(synced.error());
            std::rethrow_exception(exception());
        }
        std::lock_guard<std::mutex> lock(mutex_);
        completed_ = true;
    }
}

void KeelWork::synchronize() { order_current_stream(); }

bool KeelWork::wait(std::chrono::milliseconds) {
    order_current_stream();
    return true;
}

void KeelWork::abort() { comm_->abort(); }

c10::intrusive_ptr<c10::ivalue::Future> KeelWork::getFuture() { return future_; }

}  // namespace keel_torch
