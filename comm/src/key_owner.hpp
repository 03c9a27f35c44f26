// Who wrote a rendezvous key: a tag naming the process, so that a key left
// by a process that has ended (a job that died while its ranks met) is
// reported as such instead of as a live rival or an unreachable store.
#pragma once

#include <cstddef>
#include <span>
#include <string>

namespace keel::comm {

// This machine's host name ("?" when it cannot be read).
[[nodiscard]] std::string this_host();

// "host=<hostname>;pid=<pid>;nonce=<random>": unique per call.
[[nodiscard]] std::string owner_tag();

// Says who wrote `value` (an owner_tag), in words: "process 123 on host
// h". Empty when the value is not a tag.
[[nodiscard]] std::string owner_of(std::span<const std::byte> value);

// True when `value` is a tag written on this host by a process that no
// longer runs (elsewhere nothing can be told).
[[nodiscard]] bool owner_ended(std::span<const std::byte> value);

}  // namespace keel::comm
