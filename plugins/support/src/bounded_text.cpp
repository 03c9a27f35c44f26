#include <keel/plugin/bounded_text.hpp>

namespace keel::plugin {

namespace {

constexpr std::string_view kBoundedTextCutMark = "...";

bool continues_a_utf8_character(char byte) { return (static_cast<unsigned char>(byte) & 0xC0u) == 0x80u; }

}  // namespace

std::string bounded_text(std::string_view text, std::size_t max_bytes) {
    text = text.substr(0, text.find('\0'));
    if (text.size() <= max_bytes) return std::string(text);
    const std::string_view mark = kBoundedTextCutMark.substr(0, max_bytes);
    std::size_t keep = max_bytes - mark.size();
    // Never half a character: back to the start of the one the cut splits.
    while (keep > 0 && continues_a_utf8_character(text[keep])) --keep;
    std::string cut(text.substr(0, keep));
    cut += mark;
    return cut;
}

}  // namespace keel::plugin
