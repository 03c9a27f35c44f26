// The watch over host waits: a thread, started on the first keel wait when
// KEEL_HANG_TIMEOUT is not 0 (or KEEL_HANG_REPORT is set), that wakes a few
// times per timeout, and diagnoses the process once for each wait that has
// lasted the timeout (once per wait). With KEEL_HANG_REPORT=<file> it also
// writes the JSON report there, then and on SIGUSR1.
#pragma once

#include <string>

namespace keel::doctor {

// Whether host waits are recorded and watched (read once).
[[nodiscard]] bool watchdog_wanted() noexcept;
// Starts the watch if it is wanted and not running yet.
void ensure_watchdog() noexcept;
// Writes `json` to KEEL_HANG_REPORT, if set (replacing the file at once).
void write_report_file(const std::string& json) noexcept;

}  // namespace keel::doctor
