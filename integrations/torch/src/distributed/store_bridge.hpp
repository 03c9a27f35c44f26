// c10d's Store (torch's TCPStore behind env://, FileStore, HashStore, each
// wrapped in the process group's PrefixStore) as the keel::Store the ranks'
// communicators meet through.
#pragma once

#include <keel/comm.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

namespace keel_torch {

// The keel store shares `store` (keeps it alive). c10d errors (a timeout, a
// lost store server) come back as UNAVAILABLE naming the key.
[[nodiscard]] keel::Result<keel::Store> keel_store_of(c10::intrusive_ptr<c10d::Store> store);

}  // namespace keel_torch
