#include <keel/plugin/host_log.hpp>

#include <atomic>

namespace keel::plugin {

namespace {
std::atomic<const keel_host_services*> g_services{nullptr};
}

void HostLog::install(const keel_host_services* services) noexcept {
    // Only the logging fields, which every minor has: a runtime older than
    // this plugin's keel.h (a shorter struct) still gets its log.
    if (services && services->struct_size < KEEL_HOST_SERVICES_STRUCT_SIZE_1_0) services = nullptr;
    g_services.store(services, std::memory_order_release);
}

void HostLog::uninstall() noexcept { g_services.store(nullptr, std::memory_order_release); }

bool HostLog::enabled(keel_log_level level) noexcept {
    const keel_host_services* s = g_services.load(std::memory_order_acquire);
    return s && s->log_enabled(s->context, level) != 0;
}

void HostLog::write(keel_log_level level, const std::string& message) noexcept {
    const keel_host_services* s = g_services.load(std::memory_order_acquire);
    if (s) s->log(s->context, level, message.c_str());
}

}  // namespace keel::plugin
