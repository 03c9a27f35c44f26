#include <keel/diagnose.hpp>

#include <keel/stream.hpp>

#include "access.hpp"
#include "diagnose/host_waits.hpp"
#include "diagnose/report.hpp"
#include "diagnose/sections.hpp"
#include "diagnose/watchdog.hpp"
#include "logging.hpp"

#include <map>
#include <memory>
#include <mutex>

namespace keel {

Diagnosis diagnose() {
    std::string json;
    Diagnosis d = doctor::build_diagnosis("keel::diagnose() was called", &json);
    detail::log_warn(d.text);
    doctor::write_report_file(json);
    return d;
}

std::string diagnosis_name(const Stream& stream) {
    const doctor::StreamLedger* ledger = detail::Access::ledger(stream);
    return ledger != nullptr ? ledger->name() : std::string();
}

BlockedOn::BlockedOn(const Stream& stream, std::string_view what) noexcept {
    const doctor::StreamLedger* ledger = detail::Access::ledger(stream);
    try {
        token_ = doctor::begin_note(std::string(what), ledger != nullptr ? ledger->here() : 0);
    } catch (...) {
    }
}

BlockedOn::BlockedOn(std::string_view what) noexcept {
    try {
        token_ = doctor::begin_note(std::string(what), 0);
    } catch (...) {
    }
}

BlockedOn::~BlockedOn() { doctor::end_note(token_); }

namespace {

struct SectionRegistry {
    std::mutex running;  // held while reports run; a section's removal waits for it
    std::mutex mu;
    std::uint64_t next = 1;
    std::map<std::uint64_t, std::shared_ptr<std::function<std::string()>>> sections;
};

SectionRegistry& sections() {
    static SectionRegistry* registry = new SectionRegistry();  // never destroyed
    return *registry;
}

}  // namespace

DiagnosisSection::DiagnosisSection(std::function<std::string()> report) {
    SectionRegistry& r = sections();
    std::lock_guard lock(r.mu);
    token_ = r.next++;
    r.sections.emplace(token_, std::make_shared<std::function<std::string()>>(std::move(report)));
}

DiagnosisSection::~DiagnosisSection() {
    if (token_ == 0) return;
    SectionRegistry& r = sections();
    std::lock_guard running(r.running);
    std::lock_guard lock(r.mu);
    r.sections.erase(token_);
}

std::vector<std::string> doctor::section_reports() {
    SectionRegistry& r = sections();
    std::lock_guard running(r.running);
    std::vector<std::shared_ptr<std::function<std::string()>>> todo;
    {
        std::lock_guard lock(r.mu);
        for (const auto& [token, fn] : r.sections) todo.push_back(fn);
    }
    std::vector<std::string> out;
    for (const auto& fn : todo) {
        try {
            std::string text = (*fn)();
            if (!text.empty()) out.push_back(std::move(text));
        } catch (const std::exception& e) {
            out.push_back(std::string("(a diagnosis section failed: ") + e.what() + ")");
        } catch (...) {
            out.push_back("(a diagnosis section failed)");
        }
    }
    return out;
}

}  // namespace keel
