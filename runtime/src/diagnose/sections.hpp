// The contributors to a diagnosis beyond the runtime's streams
// (keel::DiagnosisSection), run in registration order.
#pragma once

#include <string>
#include <vector>

namespace keel::doctor {

// Every registered section's report; waits for sections being removed.
[[nodiscard]] std::vector<std::string> section_reports();

}  // namespace keel::doctor
