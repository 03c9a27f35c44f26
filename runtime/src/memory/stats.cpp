#include <keel/memory_stats.hpp>

#include <keel/format.hpp>

#include <cstdio>
#include <string_view>

namespace keel {

const char* block_state_name(BlockState state) noexcept {
    switch (state) {
        case BlockState::free: return "free";
        case BlockState::allocated: return "allocated";
        case BlockState::pending: return "pending";
    }
    return "?";
}

std::string AllocatorStats::to_string() const {
    std::string s;
    s += "allocated " + format_bytes(allocated_bytes) + " in " + std::to_string(allocated_count) +
         " block(s) (peak " + format_bytes(peak_allocated_bytes) + ")";
    s += ", reserved " + format_bytes(reserved_bytes) + " in " + std::to_string(segment_count) +
         " segment(s) (peak " + format_bytes(peak_reserved_bytes) + ")";
    s += ", cached " + format_bytes(cached_bytes);
    s += ", pending free " + format_bytes(pending_free_bytes) + " in " +
         std::to_string(pending_free_count) + " block(s) (peak " +
         format_bytes(peak_pending_free_bytes) + ")";
    s += ", peak in use " + format_bytes(peak_in_use_bytes);
    s += ", " + std::to_string(allocations) + " allocation(s), " + std::to_string(cache_hits) +
         " cache hit(s), " + std::to_string(raw_allocations) + " raw allocation(s), " +
         std::to_string(raw_frees) + " raw free(s), " + std::to_string(oom_retries) +
         " OOM retr" + (oom_retries == 1 ? "y" : "ies") + ", " + std::to_string(ooms) + " OOM(s)";
    return s;
}

std::string MemorySnapshot::to_string() const {
    std::string s;
    char line[160];
    for (const SegmentSnapshot& seg : segments) {
        std::snprintf(line, sizeof line, "segment 0x%llx %s stream %p %s\n",
                      static_cast<unsigned long long>(seg.addr), format_bytes(seg.size).c_str(),
                      static_cast<void*>(seg.stream), seg.small ? "small" : "large");
        s += line;
        for (const BlockSnapshot& b : seg.blocks) {
            std::snprintf(line, sizeof line, "  0x%llx %-10s %s\n",
                          static_cast<unsigned long long>(b.addr), format_bytes(b.size).c_str(),
                          block_state_name(b.state));
            s += line;
        }
    }
    return s;
}

namespace {

void json_string(std::string& out, std::string_view text) {
    out += '"';
    for (char c : text) {
        if (c == '"' || c == '\\') {
            out += '\\';
            out += c;
        } else if (static_cast<unsigned char>(c) < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", c);
            out += buf;
        } else {
            out += c;
        }
    }
    out += '"';
}

void json_hex(std::string& out, std::uint64_t value) {
    char buf[24];
    std::snprintf(buf, sizeof buf, "\"0x%llx\"", static_cast<unsigned long long>(value));
    out += buf;
}

}  // namespace

std::string MemorySnapshot::to_json() const {
    std::string out = "{\"device\":";
    json_string(out, device);
    out += ",\"segments\":[";
    for (std::size_t i = 0; i < segments.size(); ++i) {
        const SegmentSnapshot& seg = segments[i];
        out += i == 0 ? "\n{\"addr\":" : ",\n{\"addr\":";
        json_hex(out, seg.addr);
        out += ",\"size\":" + std::to_string(seg.size) + ",\"stream\":";
        if (seg.stream_id != 0)
            json_string(out, (device.empty() ? std::string("device") : device) + " stream " + std::to_string(seg.stream_id));
        else
            out += "null";
        out += seg.small ? ",\"pool\":\"small\"" : ",\"pool\":\"large\"";
        out += ",\"blocks\":[";
        for (std::size_t j = 0; j < seg.blocks.size(); ++j) {
            const BlockSnapshot& b = seg.blocks[j];
            out += j == 0 ? "{\"addr\":" : ",{\"addr\":";
            json_hex(out, b.addr);
            out += ",\"size\":" + std::to_string(b.size) + ",\"requested\":" + std::to_string(b.requested) +
                   ",\"state\":\"" + block_state_name(b.state) + "\"";
            if (!b.tag.empty()) {
                out += ",\"tag\":";
                json_string(out, b.tag);
            }
            out += '}';
        }
        out += "]}";
    }
    out += "\n]}\n";
    return out;
}

std::string StagingStats::to_string() const {
    return "staging reserved " + format_bytes(reserved_bytes) + ", cached " +
           format_bytes(cached_bytes) + ", in flight " + format_bytes(in_flight_bytes) +
           " (peak " + format_bytes(peak_in_flight_bytes) + "), " +
           std::to_string(host_allocations) + " host allocation(s), " + std::to_string(reuses) +
           " reuse(s), " + std::to_string(inline_copies) + " inline cop" +
           (inline_copies == 1 ? "y" : "ies") + ", " + std::to_string(in_flight_waits) +
           " in-flight wait(s), " + std::to_string(ring_reuses) + " ring reuse(s), " +
           std::to_string(ring_give_ups) + " ring give-up(s), " + std::to_string(host_copy_threads) +
           " host copy thread(s), " + std::to_string(parallel_copies) + " parallel cop" +
           (parallel_copies == 1 ? "y" : "ies") + ", " + std::to_string(direct_copies) + " direct cop" +
           (direct_copies == 1 ? "y" : "ies") + ", " + std::to_string(plugin_staging_waits) +
           " wait(s) for the plugin's staging";
}

std::string PageableStagingStats::to_string() const {
    return "pageable staging: " + std::to_string(copies) + " staged cop" + (copies == 1 ? "y" : "ies") +
           " (" + std::to_string(short_copies) + " short, " + std::to_string(refused_copies) +
           " refused), " + std::to_string(pinned_allocations) + " pinned allocation(s), " +
           std::to_string(pinned_frees) + " free(s), " + std::to_string(block_reuses) +
           " block reuse(s), held " + format_bytes(held_bytes) + " of " + format_bytes(capacity_bytes) +
           " (lent " + format_bytes(lent_bytes) + "), " + std::to_string(host_copy_threads) +
           " host copy thread(s)";
}

std::string TrackerStats::to_string() const {
    return std::to_string(outstanding) + " tracked operation(s) outstanding (peak " +
           std::to_string(peak_outstanding) + "), " + std::to_string(swept) + " released, " +
           std::to_string(queue_waits) + " queue wait(s), " + std::to_string(events_created) +
           " event(s) created";
}

}  // namespace keel
