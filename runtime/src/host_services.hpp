// The keel_host_services a plugin receives: logging into the "keel" spdlog logger.
#pragma once

#include <keel/keel.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace spdlog {
class logger;
}

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
    ~HostServices();

    [[nodiscard]] const keel_host_services* c() const noexcept { return &services_; }

    // The options offered to keel_plugin_init (keel.h: valid during that
    // call only): set before it, cleared after it.
    void offer_options(const std::map<std::string, std::string>& options);
    void withdraw_options() noexcept;

private:
    // Held so that plugin threads logging during shutdown never see it gone.
    std::shared_ptr<spdlog::logger> logger_;
    keel_host_services services_{};
    std::vector<std::string> option_text_;  // keys and values the options point into
    std::vector<keel_option> options_;
};

}  // namespace keel::detail
