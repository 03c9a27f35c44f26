// A host function whose stream's ledger sees it start and finish: so the
// hang doctor knows a stream's progress up to its host functions exactly,
// and which host function a blocked thread is running.
#pragma once

#include "diagnose/host_waits.hpp"
#include "diagnose/ledger.hpp"

#include <keel/host_func.hpp>

#include <memory>
#include <utility>

namespace keel::doctor {

class TrackedHostFunc final : public keel::detail::HostFuncBase {
public:
    TrackedHostFunc(std::unique_ptr<keel::detail::HostFuncBase> inner, std::shared_ptr<StreamLedger> ledger,
                    StreamLedger::Noted at) noexcept
        : inner_(std::move(inner)), ledger_(std::move(ledger)), at_(at) {}

    Result<void> invoke(Status status) override {
        struct Running {
            TrackedHostFunc& self;
            Site previous;
            explicit Running(TrackedHostFunc& s) : self(s), previous(current_host_func()) {
                self.ledger_->host_func_started(self.at_.index, self.at_.slot);
                set_current_host_func(make_site(self.ledger_->id(), self.at_.index));
            }
            ~Running() {
                set_current_host_func(previous);
                self.ledger_->host_func_finished(self.at_.index, self.at_.slot);
            }
            Running(const Running&) = delete;
            Running& operator=(const Running&) = delete;
            Running(Running&&) = delete;
            Running& operator=(Running&&) = delete;
        } running(*this);
        return inner_->invoke(status);
    }
    [[nodiscard]] bool fallible() const noexcept override { return inner_->fallible(); }

private:
    std::unique_ptr<keel::detail::HostFuncBase> inner_;
    std::shared_ptr<StreamLedger> ledger_;
    StreamLedger::Noted at_;
};

}  // namespace keel::doctor
