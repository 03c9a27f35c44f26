#include "staged_copy.hpp"

namespace keel::comm {

Result<void> enqueue_staged_copies(const Stream& stream, std::span<const StagedCopy> copies,
                                   StagedDirection direction) {
    for (const StagedCopy& c : copies) {
        if (direction == StagedDirection::to_staging)
            KEEL_TRY(stream.copy(*c.staging, 0, c.view));
        else
            KEEL_TRY(stream.copy(c.view, *c.staging, 0));
    }
    return {};
}

}  // namespace keel::comm
