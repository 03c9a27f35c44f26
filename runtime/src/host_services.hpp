// The keel_host_services a plugin receives: logging into the "keel" spdlog logger.
#pragma once

#include <keel/keel.h>

#include <spdlog/spdlog.h>

#include <memory>

namespace keel::detail {

// Owns one keel_host_services and what its context points to. Its address
// is handed to the plugin, so it lives on the heap, is never moved, and is
// destroyed only after the plugin's shutdown (see Plugin).
class HostServices {
public:
    HostServices();
    HostServices(const HostServices&) = delete;
    HostServices& operator=(const HostServices&) = delete;
    HostServices(HostServices&&) = delete;
    HostServices& operator=(HostServices&&) = delete;
    ~HostServices() = default;

    [[nodiscard]] const keel_host_services* c() const noexcept { return &services_; }

private:
    // Held so that plugin threads logging during shutdown never see it gone.
    std::shared_ptr<spdlog::logger> logger_;
    keel_host_services services_{};
};

}  // namespace keel::detail
