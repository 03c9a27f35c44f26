// The bounded text an exporter's failure sends to the importers of an
// interprocess event, one event per bit (interprocess_message.hpp): what
// crosses, that a long text is cut and never overruns the pool, and that
// reading never asks about an event the exporter did not create.
#include "interprocess_message.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace keel::level_zero {
namespace {

// The states the exporter leaves: its events, then events it never
// created, which read as signalled (as Intel's driver reads fresh memory).
struct Crossing {
    std::vector<bool> created;
    std::vector<bool> state;
    std::uint32_t highest_asked = 0;
};

Crossing publish(const std::string& message) {
    const std::string text = bounded_message(message);
    Crossing c{std::vector<bool>(kMessageEvents, false), std::vector<bool>(kMessageEvents, true)};
    EXPECT_LE(message_events(text), kMessageEvents) << "more events than the pool has";
    for (std::uint32_t i = 0; i < message_events(text); ++i) {
        c.created[i] = true;
        c.state[i] = message_bit(text, i);
    }
    return c;
}

std::string receive(Crossing& c) {
    Result<std::string> got = read_message([&c](std::uint32_t event) -> Result<bool> {
        if (event >= kMessageEvents) return Error(KEEL_STATUS_OUT_OF_RANGE, "event " + std::to_string(event));
        if (!c.created[event]) return Error(KEEL_STATUS_FAILED_PRECONDITION, "never created: " + std::to_string(event));
        c.highest_asked = std::max(c.highest_asked, event);
        return static_cast<bool>(c.state[event]);
    });
    EXPECT_TRUE(got.ok()) << got.error().message();
    return got.ok() ? *got : "";
}

TEST(InterprocessMessage, AMessageWithinTheBoundCrossesWhole) {
    for (const std::string& message : {std::string("[level_zero host function] planted exporter failure 5150"),
                                      std::string("é ünïcødé ✓"), std::string(kMessageBytes, 'z'), std::string()}) {
        Crossing c = publish(message);
        EXPECT_EQ(receive(c), message);
    }
}

TEST(InterprocessMessage, ALongerMessageArrivesCutWithAnEllipsisNeverOverrunningThePool) {
    const std::string message = "a device failure " + std::string(5000, 'x') + " TAIL";
    const std::string text = bounded_message(message);
    EXPECT_EQ(text.size(), kMessageBytes);
    EXPECT_EQ(text, message.substr(0, kMessageBytes - 3) + "...");
    EXPECT_EQ(message_events(text), kMessageEvents);
    Crossing c = publish(message);
    EXPECT_EQ(receive(c), text);
    EXPECT_EQ(c.highest_asked, kMessageEvents - 1);
    // Cut one byte past the bound too.
    EXPECT_EQ(bounded_message(std::string(kMessageBytes + 1, 'y')), std::string(kMessageBytes - 3, 'y') + "...");
}

TEST(InterprocessMessage, TheCutNeverSplitsACharacter) {
    // Two-byte characters: the cut after 125 bytes lands inside the 63rd
    // and backs off to its start.
    std::string message;
    for (int i = 0; i < 100; ++i) message += "\u00e9";
    const std::string text = bounded_message(message);
    EXPECT_EQ(text, message.substr(0, 124) + "...");
}

TEST(InterprocessMessage, AZeroByteEndsTheMessage) {
    const std::string message("before\0after", 12);
    EXPECT_EQ(bounded_message(message), "before");
    Crossing c = publish(message);
    EXPECT_EQ(receive(c), "before");
}

TEST(InterprocessMessage, AFailedReadIsAnError) {
    Result<std::string> got = read_message([](std::uint32_t event) -> Result<bool> {
        if (event == 9) return Error(KEEL_STATUS_DEVICE_ERROR, "the device is lost");
        return true;
    });
    ASSERT_FALSE(got.ok());
    EXPECT_EQ(got.error().code(), KEEL_STATUS_DEVICE_ERROR);
}

}  // namespace
}  // namespace keel::level_zero
