#include "key_owner.hpp"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <random>
#include <string_view>
#include <unistd.h>

namespace keel::comm {

std::string this_host() {
    char name[256] = {};
    if (::gethostname(name, sizeof name - 1) != 0) return "?";
    return name;
}

namespace {

// The field `name` of a tag, or empty.
std::string_view field(std::string_view tag, std::string_view name) {
    const std::string needle = std::string(name) + "=";
    std::size_t at = 0;
    while (at < tag.size()) {
        const std::size_t end = std::min(tag.find(';', at), tag.size());
        const std::string_view part = tag.substr(at, end - at);
        if (part.starts_with(needle)) return part.substr(needle.size());
        at = end + 1;
    }
    return {};
}

std::string_view as_text(std::span<const std::byte> value) {
    return {reinterpret_cast<const char*>(value.data()), value.size()};
}

}  // namespace

std::string owner_tag() {
    std::random_device entropy;
    return "host=" + this_host() + ";pid=" + std::to_string(::getpid()) + ";nonce=" + std::to_string(entropy()) +
           std::to_string(entropy());
}

std::string owner_of(std::span<const std::byte> value) {
    const std::string_view tag = as_text(value);
    const std::string_view host = field(tag, "host"), pid = field(tag, "pid");
    if (host.empty() || pid.empty()) return {};
    return "process " + std::string(pid) + " on host " + std::string(host);
}

bool owner_ended(std::span<const std::byte> value) {
    const std::string_view tag = as_text(value);
    if (field(tag, "host") != this_host()) return false;
    const std::string pid(field(tag, "pid"));
    char* end = nullptr;
    const long p = std::strtol(pid.c_str(), &end, 10);
    if (pid.empty() || *end != '\0' || p <= 0) return false;
    return ::kill(static_cast<pid_t>(p), 0) != 0 && errno == ESRCH;
}

}  // namespace keel::comm
