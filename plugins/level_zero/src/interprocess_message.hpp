// How an exporter's error text crosses to the importers of an interprocess
// event (interprocess_event.hpp): Level Zero shares nothing between
// processes but the states of an IPC pool's events, so the text travels one
// bit per event, byte after byte, a zero byte ending it. Its length is
// bounded, so the pool's size is fixed when it is created.
//
// The exporter creates exactly message_events(text) events, which resets
// them (bits 0), then signals the bits that are 1; the importer reads no
// event beyond those: the state of an event its exporter never created is
// undefined (Intel's driver reads fresh pool memory as signalled).
//
// Pure functions of their arguments: thread-safe.
#pragma once

#include <keel/result.hpp>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace keel::level_zero {

// The most bytes of text that cross, and the events that carry them.
inline constexpr std::uint32_t kMessageBytes = 128;
inline constexpr std::uint32_t kMessageEvents = 8 * kMessageBytes;

// `message` as it crosses: up to its first zero byte; when longer than
// kMessageBytes, cut at a UTF-8 character boundary and ended with "...",
// kMessageBytes bytes at most.
[[nodiscard]] std::string bounded_message(std::string_view message);

// The events that carry `text` (a bounded_message): 8 per byte, and 8 more
// for the zero byte that ends a text shorter than the bound.
[[nodiscard]] std::uint32_t message_events(std::string_view text);

// Whether event `event` (< message_events(text)) is signalled for `text`:
// bit event % 8 of byte event / 8.
[[nodiscard]] bool message_bit(std::string_view text, std::uint32_t event);

// The text back, read through `signalled` (whether event i is signalled)
// byte by byte up to its zero byte or the bound: it asks about no event
// beyond message_events() of what it returns. The first error of
// `signalled` ends the reading and is returned.
[[nodiscard]] Result<std::string> read_message(const std::function<Result<bool>(std::uint32_t event)>& signalled);

}  // namespace keel::level_zero
