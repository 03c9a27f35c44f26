#include "annotations.hpp"

#include "../device.hpp"
#include "../stream.hpp"
#include "checker.hpp"

#include <keel/plugin/boundary.hpp>

namespace keel::cpu::entries {

keel_error* stream_annotate_range(keel_stream stream, keel_range_annotation what, keel_device_addr addr,
                                  uint64_t size) {
    return plugin::entry("cpu stream_annotate_range", [&]() -> Result<void> {
        KEEL_TRY_ASSIGN(Stream * s, Stream::from(stream));
        Checker* checker = s->device().checker();
        if (checker == nullptr) return Error(KEEL_STATUS_FAILED_PRECONDITION, "the checker is off");
        if (size == 0) return Error(KEEL_STATUS_INVALID_ARGUMENT, "an empty range");
        KEEL_TRY(s->check_usable());
        switch (what) {
            case KEEL_RANGE_RELEASED: return checker->release_range(*s, addr, size);
            case KEEL_RANGE_ACQUIRED: return checker->acquire_range(*s, addr, size);
            default: return Error(KEEL_STATUS_INVALID_ARGUMENT, "unknown annotation " + std::to_string(what));
        }
    });
}

}  // namespace keel::cpu::entries
