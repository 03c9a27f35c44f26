// The communication entries of keel.h as one set: comm_create, comm_destroy,
// comm_abort, comm_all_reduce, comm_broadcast, comm_all_gather,
// comm_reduce_scatter and comm_send_recv (1.4) come all or none, and from
// 1.5 comm_send_recv_sized belongs to them. An entry counts when it lies
// within the table's struct_size and is set, as the runtime reads a table.
// The one place that lists them: the runtime's choice of engine, keel-cts's
// table check and the conformance suite ask here.
#pragma once

#include <keel/keel.h>

namespace keel::plugin {

// The entries of 1.4's set.
inline constexpr int kCommEntries = 8;

#define KEEL_PLUGIN_HAS_ENTRY_(table, entry) \
    ((table).struct_size >= KEEL_API_ENTRY_END(entry) && (table).entry != nullptr)

// How many of the kCommEntries entries of 1.4's set `table` has.
[[nodiscard]] inline int comm_entries_present(const keel_plugin_api& table) noexcept {
    return KEEL_PLUGIN_HAS_ENTRY_(table, comm_create) + KEEL_PLUGIN_HAS_ENTRY_(table, comm_destroy) +
           KEEL_PLUGIN_HAS_ENTRY_(table, comm_abort) + KEEL_PLUGIN_HAS_ENTRY_(table, comm_all_reduce) +
           KEEL_PLUGIN_HAS_ENTRY_(table, comm_broadcast) + KEEL_PLUGIN_HAS_ENTRY_(table, comm_all_gather) +
           KEEL_PLUGIN_HAS_ENTRY_(table, comm_reduce_scatter) + KEEL_PLUGIN_HAS_ENTRY_(table, comm_send_recv);
}

// comm_send_recv_sized (1.5) is present.
[[nodiscard]] inline bool has_sized_send_recv(const keel_plugin_api& table) noexcept {
    return KEEL_PLUGIN_HAS_ENTRY_(table, comm_send_recv_sized);
}

#undef KEEL_PLUGIN_HAS_ENTRY_

// The set a caller may use: a plugin declaring 1.4 or later with all of
// 1.4's entries, and from 1.5 comm_send_recv_sized too.
[[nodiscard]] inline bool has_comm_set(const keel_plugin_api& table) noexcept {
    if (table.abi_minor < 4 || comm_entries_present(table) != kCommEntries) return false;
    return table.abi_minor < 5 || has_sized_send_recv(table);
}

}  // namespace keel::plugin
