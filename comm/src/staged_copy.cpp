#include "staged_copy.hpp"

#include <keel/c_error.hpp>
#include <keel/plugin_table.hpp>

namespace keel::comm {

Result<void> enqueue_inputs(const Stream& stream, std::span<const StagedCopy> copies, bool checked) {
    const keel_plugin_api& api = plugin_table(stream.device());
    const keel_stream handle = plugin_handle(stream);
    for (const StagedCopy& c : copies) {
        if (c.view.size() == 0) continue;
        if (checked) {
            KEEL_TRY(stream.copy(*c.staging, c.view));
        } else {
            KEEL_TRY(take_c_error(api.memcpy_d2h(handle, c.staging->data(), c.view.address(), c.view.size())));
        }
    }
    return {};
}

Result<void> enqueue_outputs(const Stream& stream, std::span<const StagedCopy> copies, bool checked) {
    const keel_plugin_api& api = plugin_table(stream.device());
    const keel_stream handle = plugin_handle(stream);
    for (const StagedCopy& c : copies) {
        if (c.view.size() == 0) continue;
        if (checked) {
            KEEL_TRY(stream.copy(c.view, *c.staging, 0));
        } else {
            KEEL_TRY(take_c_error(api.memcpy_h2d(handle, c.view.address(), c.staging->data(), c.view.size())));
        }
    }
    return {};
}

}  // namespace keel::comm
