// What a plugin's comm_create (keel.h 1.4) reads from its keel_comm_config,
// checked once, and the caller's store as C++ calls.
#pragma once

#include <keel/keel.h>
#include <keel/result.hpp>

#include <cstdint>
#include <string>
#include <string_view>

namespace keel::plugin {

struct CommConfig {
    int rank = 0;
    int size = 1;
    std::uint64_t timeout_ms = 0;
    std::string key_prefix;
    const keel_comm_store* store = nullptr;

    // "comm '<prefix>' rank r/n": how messages name the communicator.
    [[nodiscard]] std::string where() const;
    // Sets "<prefix>/<key>".
    [[nodiscard]] Result<void> set(std::string_view key, std::string_view value) const;
    // "<prefix>/<key>", waiting up to the timeout (UNAVAILABLE after it).
    [[nodiscard]] Result<std::string> get(std::string_view key) const;
};

// INVALID_ARGUMENT, naming the field, for a null or short config or store,
// rank outside [0, size), an empty key prefix or a zero timeout.
[[nodiscard]] Result<CommConfig> read_comm_config(const keel_comm_config* config);

// Bytes per element of a dtype a reduction takes, or INVALID_ARGUMENT naming
// the dtype or the reduction.
[[nodiscard]] Result<std::uint64_t> reduction_element_size(keel_dtype dtype, keel_reduce_op op);

}  // namespace keel::plugin
