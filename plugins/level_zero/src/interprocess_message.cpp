#include "interprocess_message.hpp"

#include <keel/plugin/bounded_text.hpp>

#include <algorithm>

namespace keel::level_zero {

std::string bounded_message(std::string_view message) { return plugin::bounded_text(message, kMessageBytes); }

std::uint32_t message_events(std::string_view text) {
    const std::size_t bytes = std::min<std::size_t>(text.size() + 1, kMessageBytes);
    return static_cast<std::uint32_t>(8 * bytes);
}

bool message_bit(std::string_view text, std::uint32_t event) {
    const std::size_t byte = event / 8;
    if (byte >= text.size()) return false;  // the zero byte that ends it
    return ((static_cast<unsigned char>(text[byte]) >> (event % 8)) & 1u) != 0;
}

Result<std::string> read_message(const std::function<Result<bool>(std::uint32_t event)>& signalled) {
    std::string text;
    for (std::uint32_t byte = 0; byte < kMessageBytes; ++byte) {
        unsigned value = 0;
        for (std::uint32_t bit = 0; bit < 8; ++bit) {
            KEEL_TRY_ASSIGN(const bool on, signalled(8 * byte + bit));
            if (on) value |= 1u << bit;
        }
        if (value == 0) break;
        text += static_cast<char>(value);
    }
    return text;
}

}  // namespace keel::level_zero
