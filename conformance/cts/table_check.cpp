#include "table_check.hpp"

#include "elf_exports.hpp"

#include <keel/keel.h>
#include <keel/plugin/comm_entries.hpp>
#include <keel/testing/loaded_plugin.hpp>

#include <cstring>
#include <optional>
#include <utility>

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
        default: return 0;
    }
}

// Present iff within struct_size and non-null (as the runtime reads it).
template <class Fn>
bool present(const keel_plugin_api& t, std::size_t end, Fn fn) {
    return t.struct_size >= end && fn != nullptr;
}
#define KEEL_CTS_HAS(table, entry) present(table, KEEL_API_ENTRY_END(entry), (table).entry)

struct Checker {
    TableReport& report;
    void pass(std::string name) { report.checks.push_back({std::move(name), Outcome::passed, "", ""}); }
    void fail(std::string name, std::string why) {
        report.checks.push_back({std::move(name), Outcome::failed, std::move(why), ""});
    }
    void skip(std::string name, std::string why) {
        report.checks.push_back({std::move(name), Outcome::skipped, std::move(why), ""});
    }
    void expect(bool ok, std::string name, std::string why) {
        ok ? pass(std::move(name)) : fail(std::move(name), std::move(why));
    }
};

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

void check_table(Checker& c, TableReport& r, const keel_plugin_api& t) {
    r.abi_major = t.abi_major;
    r.abi_minor = t.abi_minor;
    r.table_size = t.struct_size;
    c.expect(t.abi_major == KEEL_ABI_VERSION_MAJOR, "ABI major is " + std::to_string(KEEL_ABI_VERSION_MAJOR),
             "the table says " + std::to_string(t.abi_major));
    const std::size_t required_end = KEEL_API_ENTRY_END(memset_d8);
    const std::size_t minor_size = table_size_of_minor(t.abi_minor);
    const std::string size_name = "struct_size fits ABI 1." + std::to_string(t.abi_minor);
    if (t.struct_size < required_end) {
        c.fail(size_name, std::to_string(t.struct_size) + " bytes end before the last required entry (" +
                              std::to_string(required_end) + ")");
    } else if (minor_size != 0) {
        c.expect(t.struct_size <= minor_size, size_name,
                 std::to_string(t.struct_size) + " bytes, more than the " + std::to_string(minor_size) +
                     " of that minor's table (bump abi_minor with new entries)");
    } else {
        c.expect(t.struct_size >= KEEL_PLUGIN_API_STRUCT_SIZE, size_name,
                 "a newer minor with a table shorter than this minor's (" +
                     std::to_string(t.struct_size) + " < " + std::to_string(KEEL_PLUGIN_API_STRUCT_SIZE) + ")");
    }
    std::string missing;
#define KEEL_CTS_REQUIRED(entry) \
    if (!KEEL_CTS_HAS(t, entry)) missing += (missing.empty() ? "" : ", ") + std::string(#entry);
    KEEL_CTS_REQUIRED(plugin_info) KEEL_CTS_REQUIRED(plugin_shutdown) KEEL_CTS_REQUIRED(device_count)
    KEEL_CTS_REQUIRED(device_get) KEEL_CTS_REQUIRED(device_properties) KEEL_CTS_REQUIRED(stream_create)
    KEEL_CTS_REQUIRED(stream_destroy) KEEL_CTS_REQUIRED(stream_synchronize) KEEL_CTS_REQUIRED(stream_query)
    KEEL_CTS_REQUIRED(stream_wait_event) KEEL_CTS_REQUIRED(stream_enqueue_host_func)
    KEEL_CTS_REQUIRED(event_create) KEEL_CTS_REQUIRED(event_destroy) KEEL_CTS_REQUIRED(event_record)
    KEEL_CTS_REQUIRED(event_query) KEEL_CTS_REQUIRED(event_synchronize) KEEL_CTS_REQUIRED(device_alloc)
    KEEL_CTS_REQUIRED(device_free) KEEL_CTS_REQUIRED(memcpy_h2d) KEEL_CTS_REQUIRED(memcpy_d2h)
    KEEL_CTS_REQUIRED(memcpy_d2d) KEEL_CTS_REQUIRED(memset_d8)
#undef KEEL_CTS_REQUIRED
    c.expect(missing.empty(), "every required entry is set", "null or beyond struct_size: " + missing);
    c.expect(KEEL_CTS_HAS(t, host_alloc) == KEEL_CTS_HAS(t, host_free), "host_alloc and host_free come together",
             "one of the pair is absent");
    c.expect(KEEL_CTS_HAS(t, kernel_get) == KEEL_CTS_HAS(t, kernel_launch),
             "kernel_get and kernel_launch come together", "one of the pair is absent");
    // [1.4] The communication entries are present as a set or absent as a set.
    const int comm_entries = plugin::comm_entries_present(t);
    c.expect(comm_entries == 0 || comm_entries == plugin::kCommEntries, "the comm_* entries come as a set (1.4)",
             std::to_string(comm_entries) + " of the " + std::to_string(plugin::kCommEntries) + " are present");
    // [1.5] For a plugin declaring 1.5 or later, comm_send_recv_sized is
    // part of that set; a 1.4 plugin is not asked for it.
    if (t.abi_minor >= 5)
        c.expect(plugin::has_sized_send_recv(t) == (comm_entries == plugin::kCommEntries),
                 "comm_send_recv_sized comes with the comm_* entries (1.5)",
                 comm_entries == plugin::kCommEntries ? "the 1.4 set is present without comm_send_recv_sized"
                                   : "comm_send_recv_sized is present without the 1.4 set");
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
                        : "event_elapsed_time is present but EVENT_TIMING is not set");
    c.expect(!(p.capabilities & KEEL_DEVICE_CAP_PINNED_MEMORY) || KEEL_CTS_HAS(t, host_alloc),
             at + "PINNED_MEMORY only with host_alloc", "PINNED_MEMORY is set but host_alloc is absent");
    c.expect(!(p.capabilities & KEEL_DEVICE_CAP_PINNED_COPIES_ONLY) || KEEL_CTS_HAS(t, host_alloc),
             at + "PINNED_COPIES_ONLY only with host_alloc", "PINNED_COPIES_ONLY is set but host_alloc is absent");
    // Bits are defined by the minor the plugin declares (PINNED_COPIES_ONLY: 1.3).
    std::uint32_t known = KEEL_DEVICE_CAP_HOST_ADDRESSABLE | KEEL_DEVICE_CAP_EVENT_TIMING |
                          KEEL_DEVICE_CAP_CONCURRENT_STREAMS | KEEL_DEVICE_CAP_PINNED_MEMORY;
    if (t.abi_minor >= 3) known |= KEEL_DEVICE_CAP_PINNED_COPIES_ONLY;
    c.expect((p.capabilities & ~known) == 0, at + "only defined capability bits",
             "unknown bits set: " + std::to_string(p.capabilities & ~known));
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
    if (raw == nullptr) return c.fail("device_get past the last device is NOT_FOUND", "it succeeded");
    const bool sized = raw->struct_size >= KEEL_ERROR_STRUCT_SIZE && raw->destroy != nullptr &&
                       raw->message != nullptr;
    if (!sized) return c.fail("errors are well-formed keel_error objects",
                              "struct_size " + std::to_string(raw->struct_size) + ", message or destroy null");
    c.pass("errors are well-formed keel_error objects");
    auto e = take(raw);
    c.expect(e->code == KEEL_STATUS_NOT_FOUND, "device_get past the last device is NOT_FOUND", describe(*e));
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
    if (report.passed()) check_devices(c, report, t);
    if (KEEL_CTS_HAS(t, plugin_shutdown)) t.plugin_shutdown();
    return report;
}

}  // namespace keel::cts
