// A keel::Store seen through keel.h's keel_comm_store callbacks, for a
// plugin's comm_create.
#pragma once

#include <keel/comm.hpp>
#include <keel/keel.h>

namespace keel::comm {

// The callbacks over `store`; valid while this object lives. Callable from
// any thread; nothing crosses the ABI as an exception.
class CStore {
public:
    explicit CStore(Store store);
    CStore(const CStore&) = delete;
    CStore& operator=(const CStore&) = delete;

    [[nodiscard]] const keel_comm_store* table() const noexcept { return &table_; }

private:
    Store store_;
    keel_comm_store table_{};
};

}  // namespace keel::comm
