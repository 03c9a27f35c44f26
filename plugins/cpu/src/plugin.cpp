// The plugin's devices and what they share.
#include "plugin.hpp"

namespace keel::cpu {

namespace {

std::vector<AddressSpace*> address_spaces(const std::vector<std::unique_ptr<Device>>& devices) {
    std::vector<AddressSpace*> spaces;
    for (const auto& d : devices) spaces.push_back(&d->memory());
    return spaces;
}

}  // namespace

Plugin::Plugin(const Config& config) : config_(config), pinned_(config.mlock_pinned, config.check) {
    for (std::uint32_t i = 0; i < config.devices; ++i)
        devices_.push_back(std::make_unique<Device>(config_, i, pinned_, ids_));
    memories_ = DeviceMemories(address_spaces(devices_));
    if (config.checker_active) {
        checker_ = std::make_unique<Checker>(config.check, memories_, pinned_);
        for (const auto& d : devices_) d->attach_checker(checker_.get());
    }
}

std::string Plugin::release_everything() {
    std::string report;
    for (std::uint32_t i = 0; i < device_count(); ++i) {
        std::string part = devices_[i]->release_everything(/*with_pinned=*/i == 0);
        if (part.empty()) continue;
        if (!report.empty()) report += "; ";
        report += device_count() > 1 ? "cpu:" + std::to_string(i) + " " + part : part;
    }
    return report;
}

}  // namespace keel::cpu
