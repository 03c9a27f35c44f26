#include "table_check.hpp"

#include "elf_exports.hpp"

#include <keel/base/required_entries.hpp>
#include <keel/keel.h>
#include <keel/plugin/comm_entries.hpp>
#include <keel/testing/loaded_plugin.hpp>

#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace keel::cts {

namespace {

using keel::testing::CapturedLog;
using keel::testing::PluginLibrary;
using keel::testing::take;

std::string describe(const keel::testing::CError& e) {
    return std::string(keel::status_name(e.code)) + ": " + e.message;
}

// The table size a plugin of `minor` writes at most (0: a minor newer than
// this keel-cts, which knows only that it is at least the current size).
std::size_t table_size_of_minor(std::uint32_t minor) {
    switch (minor) {
        case 0: return KEEL_PLUGIN_API_STRUCT_SIZE_1_0;
        case 1: return KEEL_PLUGIN_API_STRUCT_SIZE_1_1;
        case 2: return KEEL_PLUGIN_API_STRUCT_SIZE_1_2;
        case 3: return KEEL_PLUGIN_API_STRUCT_SIZE_1_3;
        case 4: return KEEL_PLUGIN_API_STRUCT_SIZE_1_4;
        case 5: return KEEL_PLUGIN_API_STRUCT_SIZE_1_5;
        case 6: return KEEL_PLUGIN_API_STRUCT_SIZE_1_6;
        default: return 0;
    }
}

// Present iff within struct_size and non-null (as the runtime reads it).
template <class Fn>
bool present(const keel_plugin_api& t, std::size_t end, Fn fn) {
    return t.struct_size >= end && fn != nullptr;
}
#define KEEL_CTS_HAS(table, entry) present(table, KEEL_API_ENTRY_END(entry), (table).entry)

std::string minor_text(std::uint32_t minor) { return "1." + std::to_string(minor); }

struct Checker {
    TableReport& report;
    void add(std::string name, Outcome outcome, std::string why, RuleRef rule) {
        report.checks.push_back({std::move(name), outcome, std::move(why),
                                 rule.id != nullptr ? minor_text(rule.minor) : "",
                                 rule.id != nullptr ? rule.id : ""});
    }
    void pass(std::string name, RuleRef rule = {}) { add(std::move(name), Outcome::passed, "", rule); }
    void fail(std::string name, std::string why, RuleRef rule = {}) {
        add(std::move(name), Outcome::failed, std::move(why), rule);
    }
    void skip(std::string name, std::string why, RuleRef rule = {}) {
        add(std::move(name), Outcome::skipped, std::move(why), rule);
    }
    void advise(std::string name, std::string why, RuleRef rule = {}) {
        add(std::move(name), Outcome::advice, std::move(why), rule);
    }
    void expect(bool ok, std::string name, std::string why, RuleRef rule = {}) {
        ok ? pass(std::move(name), rule) : fail(std::move(name), std::move(why), rule);
    }
};

// The capability bits keel.h defines at `minor` ([cap.defined-bits]).
std::uint32_t capability_bits_of_minor(std::uint32_t minor) {
    std::uint32_t bits = KEEL_DEVICE_CAP_HOST_ADDRESSABLE | KEEL_DEVICE_CAP_EVENT_TIMING |
                         KEEL_DEVICE_CAP_CONCURRENT_STREAMS | KEEL_DEVICE_CAP_PINNED_MEMORY;
    if (minor >= 3) bits |= KEEL_DEVICE_CAP_PINNED_COPIES_ONLY;
    // 1.6 reserves bits 5 and 6 (multi-device) and 7 and 8 (memory and
    // events shared between processes).
    if (minor >= 6) bits |= (1u << 5) | (1u << 6) | (1u << 7) | (1u << 8);
    return bits;
}

void check_exports(Checker& c, const std::filesystem::path& file) {
    auto symbols = exported_symbols(file);
    if (!symbols.ok()) return c.fail("exports only keel_plugin_init", symbols.error().message());
    std::string extra;
    bool has_entry = false;
    for (const std::string& name : *symbols) {
        if (name == KEEL_PLUGIN_ENTRY_NAME) {
            has_entry = true;
        } else if (extra.size() < 300) {
            extra += (extra.empty() ? "" : ", ") + name;
        }
    }
    if (!has_entry) return c.fail("exports only keel_plugin_init", "keel_plugin_init is not exported");
    c.expect(extra.empty(), "exports only keel_plugin_init",
             std::to_string(symbols->size() - 1) + " other symbol(s) exported: " + extra +
                 " (link with keel_add_plugin's version script)");
}

void check_major_refused(Checker& c, const std::filesystem::path& file) {
    const char* name = "refuses a runtime of another ABI major";
    auto library = PluginLibrary::open(file.string());
    if (!library.ok() || library->entry() == nullptr) return c.skip(name, "does not load");
    CapturedLog log;
    keel_host_services host = log.services(KEEL_ABI_VERSION_MAJOR + 1, 0);
    const keel_plugin_api* table = nullptr;
    auto error = take(library->entry()(&host, &table));
    if (!error) {
        // It accepted: it must be shut down before the real load.
        if (table != nullptr && table->plugin_shutdown != nullptr) table->plugin_shutdown();
        return c.fail(name, "keel_plugin_init accepted ABI " +
                                std::to_string(KEEL_ABI_VERSION_MAJOR + 1) + ".0");
    }
    c.expect(error->code == KEEL_STATUS_VERSION_MISMATCH, name,
             "expected VERSION_MISMATCH, got " + describe(*error));
}

int ipc_memory_entries(const keel_plugin_api& t) {
    return KEEL_CTS_HAS(t, ipc_memory_alloc) + KEEL_CTS_HAS(t, ipc_memory_export) +
           KEEL_CTS_HAS(t, ipc_memory_import) + KEEL_CTS_HAS(t, ipc_memory_close);
}
int ipc_event_entries(const keel_plugin_api& t) {
    return KEEL_CTS_HAS(t, ipc_event_export) + KEEL_CTS_HAS(t, ipc_event_import);
}

void check_table(Checker& c, TableReport& r, const keel_plugin_api& t) {
    r.abi_major = t.abi_major;
    r.abi_minor = t.abi_minor;
    r.table_size = t.struct_size;
    c.expect(t.abi_major == KEEL_ABI_VERSION_MAJOR, "ABI major is " + std::to_string(KEEL_ABI_VERSION_MAJOR),
             "the table says " + std::to_string(t.abi_major), KEEL_CTS_RULE(0, "abi.major"));
    const RuleRef size_rule = KEEL_CTS_RULE(0, "table.size-of-minor");
    const std::size_t required_end = KEEL_API_ENTRY_END(memset_d8);
    const std::size_t minor_size = table_size_of_minor(t.abi_minor);
    const std::string size_name = "struct_size fits ABI 1." + std::to_string(t.abi_minor);
    if (t.struct_size < required_end) {
        c.fail(size_name, std::to_string(t.struct_size) + " bytes end before the last required entry (" +
                              std::to_string(required_end) + ")", size_rule);
    } else if (minor_size != 0) {
        c.expect(t.struct_size <= minor_size, size_name,
                 std::to_string(t.struct_size) + " bytes, more than the " + std::to_string(minor_size) +
                     " of that minor's table (bump abi_minor with new entries)", size_rule);
    } else {
        c.expect(t.struct_size >= KEEL_PLUGIN_API_STRUCT_SIZE, size_name,
                 "a newer minor with a table shorter than this minor's (" +
                     std::to_string(t.struct_size) + " < " + std::to_string(KEEL_PLUGIN_API_STRUCT_SIZE) + ")",
                 size_rule);
    }
    std::string missing;
#define KEEL_CTS_REQUIRED(entry) \
    if (!KEEL_CTS_HAS(t, entry)) missing += (missing.empty() ? "" : ", ") + std::string(#entry);
    KEEL_REQUIRED_PLUGIN_ENTRIES(KEEL_CTS_REQUIRED)
#undef KEEL_CTS_REQUIRED
    c.expect(missing.empty(), "every required entry is set", "null or beyond struct_size: " + missing,
             KEEL_CTS_RULE(0, "table.required-entries"));
    c.expect(KEEL_CTS_HAS(t, host_alloc) == KEEL_CTS_HAS(t, host_free), "host_alloc and host_free come together",
             "one of the pair is absent", KEEL_CTS_RULE(0, "table.flags-agree"));
    c.expect(KEEL_CTS_HAS(t, kernel_get) == KEEL_CTS_HAS(t, kernel_launch),
             "kernel_get and kernel_launch come together", "one of the pair is absent",
             KEEL_CTS_RULE(0, "table.flags-agree"));
    // [1.4] The communication entries are present as a set or absent as a set.
    const int comm_entries = plugin::comm_entries_present(t);
    c.expect(comm_entries == 0 || comm_entries == plugin::kCommEntries, "the comm_* entries come as a set (1.4)",
             std::to_string(comm_entries) + " of the " + std::to_string(plugin::kCommEntries) + " are present",
             KEEL_CTS_RULE(4, "comm.set"));
    // [1.5] For a plugin declaring 1.5 or later, comm_send_recv_sized is
    // part of that set; a 1.4 plugin is not asked for it.
    if (t.abi_minor >= 5)
        c.expect(plugin::has_sized_send_recv(t) == (comm_entries == plugin::kCommEntries),
                 "comm_send_recv_sized comes with the comm_* entries (1.5)",
                 comm_entries == plugin::kCommEntries ? "the 1.4 set is present without comm_send_recv_sized"
                                   : "comm_send_recv_sized is present without the 1.4 set",
                 KEEL_CTS_RULE(5, "comm.send-recv-sized-in-set"));
    // Each IPC set comes whole or not at all.
    const int ipc_memory = ipc_memory_entries(t);
    c.expect(ipc_memory == 0 || ipc_memory == 4, "the ipc_memory_* entries come as a set",
             std::to_string(ipc_memory) + " of the 4 are present", KEEL_CTS_RULE(6, "ipc.memory-set"));
    const int ipc_events = ipc_event_entries(t);
    c.expect(ipc_events == 0 || ipc_events == 2, "the ipc_event_* entries come as a set",
             std::to_string(ipc_events) + " of the 2 are present", KEEL_CTS_RULE(6, "ipc.event-set"));
    // The peer entries are a pair.
    if (t.abi_minor >= 6)
        c.expect(KEEL_CTS_HAS(t, device_can_copy_peer) == KEEL_CTS_HAS(t, memcpy_peer),
                 "device_can_copy_peer and memcpy_peer come together", "one of the pair is absent",
                 KEEL_CTS_RULE(6, "multidev.peer-query"));
}

// What device `index` reports, checked against the table.
void check_device(Checker& c, const keel_plugin_api& t, std::uint32_t index) {
    const std::string at = "device " + std::to_string(index) + ": ";
    keel_device device = nullptr;
    if (auto e = take(t.device_get(index, &device)))
        return c.fail(at + "device_get", describe(*e));
    if (device == nullptr) return c.fail(at + "device_get", "returned a null handle");
    keel_device_properties p{};
    p.struct_size = sizeof p;
    if (auto e = take(t.device_properties(device, &p)))
        return c.fail(at + "device_properties", describe(*e));
    const bool terminated = std::memchr(p.name, 0, sizeof p.name) && std::memchr(p.vendor, 0, sizeof p.vendor);
    c.expect(terminated && p.name[0] != 0 && p.vendor[0] != 0, at + "name and vendor are set",
             "empty or not NUL-terminated");
    c.expect(p.alloc_alignment != 0 && (p.alloc_alignment & (p.alloc_alignment - 1)) == 0,
             at + "alloc_alignment is a power of two", std::to_string(p.alloc_alignment));
    const bool timing_cap = (p.capabilities & KEEL_DEVICE_CAP_EVENT_TIMING) != 0;
    c.expect(timing_cap == KEEL_CTS_HAS(t, event_elapsed_time),
             at + "EVENT_TIMING iff event_elapsed_time",
             timing_cap ? "EVENT_TIMING is set but event_elapsed_time is absent"
                        : "event_elapsed_time is present but EVENT_TIMING is not set",
             KEEL_CTS_RULE(0, "table.flags-agree"));
    c.expect(!(p.capabilities & KEEL_DEVICE_CAP_PINNED_MEMORY) || KEEL_CTS_HAS(t, host_alloc),
             at + "PINNED_MEMORY only with host_alloc", "PINNED_MEMORY is set but host_alloc is absent",
             KEEL_CTS_RULE(0, "table.flags-agree"));
    // Bits are judged by the minor the plugin declares: a bit its minor does
    // not define is ignored by the runtime (PINNED_COPIES_ONLY is 1.3's).
    const std::uint32_t known = capability_bits_of_minor(t.abi_minor);
    if (t.abi_minor >= 3) {
        c.expect(!(p.capabilities & KEEL_DEVICE_CAP_PINNED_COPIES_ONLY) || KEEL_CTS_HAS(t, host_alloc),
                 at + "PINNED_COPIES_ONLY only with host_alloc", "PINNED_COPIES_ONLY is set but host_alloc is absent",
                 KEEL_CTS_RULE(3, "cap.pinned-copies-only"));
    }
    if (t.abi_minor >= 6) {
        c.expect(!(p.capabilities & KEEL_DEVICE_CAP_PEER_COPY) || KEEL_CTS_HAS(t, memcpy_peer),
                 at + "PEER_COPY only with memcpy_peer", "PEER_COPY is set but memcpy_peer is absent",
                 KEEL_CTS_RULE(6, "multidev.peer-copy-cap"));
        const bool memory_cap = (p.capabilities & KEEL_DEVICE_CAP_IPC_MEMORY) != 0;
        c.expect(memory_cap == (ipc_memory_entries(t) == 4), at + "IPC_MEMORY iff the ipc_memory_* entries",
                 memory_cap ? "IPC_MEMORY is set but the ipc_memory_* entries are absent"
                            : "the ipc_memory_* entries are present but IPC_MEMORY is not set",
                 KEEL_CTS_RULE(6, "ipc.memory-set"));
        const bool events_cap = (p.capabilities & KEEL_DEVICE_CAP_IPC_EVENTS) != 0;
        c.expect(events_cap == (ipc_event_entries(t) == 2), at + "IPC_EVENTS iff the ipc_event_* entries",
                 events_cap ? "IPC_EVENTS is set but the ipc_event_* entries are absent"
                            : "the ipc_event_* entries are present but IPC_EVENTS is not set",
                 KEEL_CTS_RULE(6, "ipc.event-set"));
    }
    const std::uint32_t unknown = p.capabilities & ~known;
    const std::string bits_name = at + "only capability bits defined at 1." + std::to_string(t.abi_minor);
    const std::string bits_why = "bits its minor does not define are set (" + std::to_string(unknown) +
                                 "); the runtime ignores them";
    const RuleRef bits_rule = KEEL_CTS_RULE(6, "cap.defined-bits");
    if (unknown == 0) {
        c.pass(bits_name, bits_rule);
    } else if (t.abi_minor < bits_rule.minor) {
        // Older minors may leave them set: never a failure.
        c.advise(bits_name, bits_why, bits_rule);
    } else if (t.abi_minor > KEEL_ABI_VERSION_MINOR) {
        c.skip(bits_name, "a minor newer than this keel-cts (1." + std::to_string(KEEL_ABI_VERSION_MINOR) +
                              ") may define more bits", bits_rule);
    } else {
        c.fail(bits_name, bits_why, bits_rule);
    }
    if (!KEEL_CTS_HAS(t, device_native_handle)) {
        c.skip(at + "device_native_handle", "optional entry absent (answers UNIMPLEMENTED)");
    } else {
        keel_native_handle h{};
        h.struct_size = sizeof h;
        auto e = take(t.device_native_handle(device, &h));
        if (e) {
            c.expect(e->code == KEEL_STATUS_UNIMPLEMENTED, at + "device_native_handle",
                     "expected a handle or UNIMPLEMENTED, got " + describe(*e));
        } else {
            c.expect(h.kind != KEEL_NATIVE_HANDLE_NONE, at + "device_native_handle",
                     "succeeded with kind NONE");
        }
    }
    if (!KEEL_CTS_HAS(t, device_pageable_staging_stats)) {
        c.skip(at + "device_pageable_staging_stats", "optional entry absent (answers UNIMPLEMENTED)");
    } else {
        // A caller of an older minor sets a shorter struct: nothing past it is written.
        struct {
            keel_pageable_staging_stats stats;
            std::uint64_t canary;
        } shorter{};
        shorter.stats.struct_size = KEEL_STRUCT_SIZE(keel_pageable_staging_stats, copies);
        shorter.stats.held_bytes = 12345;
        shorter.canary = 0xfeedu;
        auto e = take(t.device_pageable_staging_stats(device, &shorter.stats));
        if (e) {
            c.expect(e->code == KEEL_STATUS_UNIMPLEMENTED, at + "device_pageable_staging_stats",
                     "expected stats or UNIMPLEMENTED, got " + describe(*e));
        } else {
            c.expect(shorter.stats.held_bytes == 12345 && shorter.canary == 0xfeedu,
                     at + "device_pageable_staging_stats writes only what fits struct_size",
                     "a field past the caller's struct_size was written");
            keel_pageable_staging_stats s{};
            s.struct_size = sizeof s;
            auto full = take(t.device_pageable_staging_stats(device, &s));
            c.expect(!full && s.lent_bytes <= s.held_bytes && s.pinned_frees <= s.pinned_allocations,
                     at + "device_pageable_staging_stats is consistent",
                     full ? describe(*full) : "lent > held or more frees than allocations");
        }
        auto null_out = take(t.device_pageable_staging_stats(device, nullptr));
        c.expect(null_out && (null_out->code == KEEL_STATUS_INVALID_ARGUMENT ||
                              null_out->code == KEEL_STATUS_UNIMPLEMENTED),
                 at + "device_pageable_staging_stats(null) is INVALID_ARGUMENT",
                 null_out ? describe(*null_out) : "it succeeded");
    }
}

void check_devices(Checker& c, TableReport& r, const keel_plugin_api& t) {
    keel_plugin_info info{};
    info.struct_size = sizeof info;
    if (auto e = take(t.plugin_info(&info))) return c.fail("plugin_info", describe(*e));
    r.type = info.device_type ? info.device_type : "";
    r.version = info.version ? info.version : "";
    const std::string file_type = [&] {
        std::string name = r.file.filename().string();
        return name.size() > 11 ? name.substr(8, name.size() - 11) : std::string();
    }();
    c.expect(info.device_type && r.type == file_type, "plugin_info: device type matches the file name",
             "file libkeel_" + file_type + ".so but device type '" + r.type + "'");
    c.expect(info.version != nullptr && info.status != nullptr, "plugin_info: version and status are set",
             "a null string");
    std::uint32_t count = 0;
    if (auto e = take(t.device_count(&count))) return c.fail("device_count", describe(*e));
    r.device_count = count;
    if (count == 0) c.skip("devices", "no device: " + std::string(info.status ? info.status : ""));
    for (std::uint32_t i = 0; i < count; ++i) check_device(c, t, i);

    keel_device none = nullptr;
    keel_error* raw = t.device_get(count, &none);
    const RuleRef past_end = KEEL_CTS_RULE(1, "edge.device-get-past-end");
    if (raw == nullptr) {
        if (r.abi_minor < past_end.minor)
            return c.skip("device_get past the last device is NOT_FOUND",
                          "a rule of ABI 1.1; the plugin declares 1." + std::to_string(r.abi_minor), past_end);
        return c.fail("device_get past the last device is NOT_FOUND", "it succeeded", past_end);
    }
    const bool sized = raw->struct_size >= KEEL_ERROR_STRUCT_SIZE && raw->destroy != nullptr &&
                       raw->message != nullptr;
    if (!sized) return c.fail("errors are well-formed keel_error objects",
                              "struct_size " + std::to_string(raw->struct_size) + ", message or destroy null");
    c.pass("errors are well-formed keel_error objects");
    auto e = take(raw);
    if (r.abi_minor < past_end.minor && e->code != KEEL_STATUS_NOT_FOUND)
        return c.skip("device_get past the last device is NOT_FOUND",
                      "a rule of ABI 1.1; the plugin declares 1." + std::to_string(r.abi_minor) + ": " + describe(*e),
                      past_end);
    c.expect(e->code == KEEL_STATUS_NOT_FOUND, "device_get past the last device is NOT_FOUND", describe(*e), past_end);
}

// [options.info-entry]: what plugin_option_info says is well-formed. Returns
// the keys described.
std::vector<std::string> check_option_info(Checker& c, const keel_plugin_api& t) {
    const RuleRef rule = KEEL_CTS_RULE(6, "options.info-entry");
    const char* name = "plugin_option_info describes each setting once";
    std::vector<std::string> keys;
    if (t.abi_minor < rule.minor) return keys;
    if (!KEEL_CTS_HAS(t, plugin_option_info)) {
        c.skip(name, "optional entry absent: the plugin takes no options", rule);
        return keys;
    }
    for (std::uint32_t i = 0; i < 1024; ++i) {
        keel_option_info o{};
        o.struct_size = sizeof o;
        auto e = take(t.plugin_option_info(i, &o));
        if (e) {
            if (e->code == KEEL_STATUS_NOT_FOUND) {
                c.pass(name, rule);
                return keys;
            }
            c.fail(name, "setting " + std::to_string(i) + ": expected a description or NOT_FOUND past the last, got " +
                             describe(*e), rule);
            return keys;
        }
        if (o.key == nullptr || o.value == nullptr || o.environment_variable == nullptr || o.accepts == nullptr ||
            o.meaning == nullptr) {
            c.fail(name, "setting " + std::to_string(i) + " has a null string", rule);
            return keys;
        }
        const std::string key = o.key;
        const bool well_formed = !key.empty() && key.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_") ==
                                                     std::string::npos;
        if (!well_formed || std::find(keys.begin(), keys.end(), key) != keys.end() ||
            o.source > KEEL_OPTION_SOURCE_OPTION) {
            c.fail(name, "setting " + std::to_string(i) + " ('" + key + "'): a key not of [a-z0-9_]+, described "
                             "twice, or an unknown source",
                   rule);
            return keys;
        }
        keys.push_back(key);
    }
    c.fail(name, "no NOT_FOUND after 1024 settings", rule);
    return keys;
}

// Runs keel_plugin_init with `options` and expects INVALID_ARGUMENT naming `named`.
void expect_init_refuses(Checker& c, const std::filesystem::path& file, std::vector<keel_option> options,
                         const std::string& named, std::string name) {
    const RuleRef rule = KEEL_CTS_RULE(6, "options.read-at-init");
    auto library = PluginLibrary::open(file.string());
    if (!library.ok() || library->entry() == nullptr) return c.skip(std::move(name), "does not load", rule);
    CapturedLog log(KEEL_LOG_WARN);
    keel_host_services host = log.services();
    host.options = options.data();
    host.option_count = options.size();
    host.option_stride = sizeof(keel_option);
    const keel_plugin_api* table = nullptr;
    auto error = take(library->entry()(&host, &table));
    if (!error) {
        if (table != nullptr && table->plugin_shutdown != nullptr) table->plugin_shutdown();
        return c.fail(std::move(name), "keel_plugin_init accepted it", rule);
    }
    c.expect(error->code == KEEL_STATUS_INVALID_ARGUMENT && error->message.find(named) != std::string::npos,
             std::move(name), "expected INVALID_ARGUMENT naming '" + named + "', got " + describe(*error), rule);
}

// [options.read-at-init] (1.6): an option is never ignored.
void check_options(Checker& c, const std::filesystem::path& file, std::uint32_t minor,
                   const std::vector<std::string>& keys) {
    const char* unknown = "keel_plugin_init refuses an unknown option, naming it";
    if (minor < 6) {
        return c.skip(unknown, "a rule of ABI 1.6; the plugin declares 1." + std::to_string(minor) +
                                   " (it cannot see options: the runtime refuses to give it any)",
                      KEEL_CTS_RULE(6, "options.read-at-init"));
    }
    expect_init_refuses(c, file, {{sizeof(keel_option), "keel_cts_no_such_option", "1"}}, "keel_cts_no_such_option",
                        unknown);
    if (keys.empty()) return;
    expect_init_refuses(c, file,
                        {{sizeof(keel_option), keys[0].c_str(), "1"}, {sizeof(keel_option), keys[0].c_str(), "1"}},
                        keys[0], "keel_plugin_init refuses an option given twice, naming it");
}

}  // namespace

bool TableReport::passed() const {
    for (const Check& c : checks)
        if (c.outcome == Outcome::failed) return false;
    return true;
}

TableReport check_plugin_table(const std::filesystem::path& file) {
    TableReport report;
    report.file = file;
    Checker c{report};
    const std::string name = file.filename().string();
    c.expect(name.starts_with("libkeel_") && name.ends_with(".so") && name.size() > 11,
             "file is named libkeel_<type>.so", name);
    check_exports(c, file);
    check_major_refused(c, file);

    auto library = PluginLibrary::open(file.string());
    if (!library.ok()) {
        c.fail("loads with dlopen", library.error().message());
        return report;
    }
    if (library->entry() == nullptr) {
        c.fail("loads with dlopen", "no keel_plugin_init symbol");
        return report;
    }
    CapturedLog log(KEEL_LOG_WARN);
    keel_host_services host = log.services();
    const keel_plugin_api* table = nullptr;
    if (auto e = take(library->entry()(&host, &table))) {
        c.fail("keel_plugin_init succeeds", describe(*e));
        return report;
    }
    if (table == nullptr || table->struct_size < KEEL_API_ENTRY_END(abi_minor)) {
        c.fail("keel_plugin_init succeeds", "no table, or a table without its header");
        return report;
    }
    c.pass("keel_plugin_init succeeds");
    // A copy of the plugin's bytes (no more than it wrote) in a zeroed
    // table of this version, as the runtime reads it.
    keel_plugin_api t{};
    std::memcpy(&t, table, std::min<std::size_t>(table->struct_size, sizeof t));
    t.struct_size = table->struct_size;
    check_table(c, report, t);
    std::vector<std::string> option_keys;
    if (report.passed()) {
        check_devices(c, report, t);
        option_keys = check_option_info(c, t);
    }
    if (KEEL_CTS_HAS(t, plugin_shutdown)) t.plugin_shutdown();
    // Each on a fresh init, after the one above shut down.
    if (report.passed()) check_options(c, file, t.abi_minor, option_keys);
    return report;
}

}  // namespace keel::cts
