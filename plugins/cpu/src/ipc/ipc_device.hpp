// What one CPU device keeps for sharing with other processes: its shared
// allocations and the thread that completes its interprocess events.
#pragma once

#include "ipc_event.hpp"
#include "ipc_memory.hpp"

namespace keel::cpu::ipc {

struct IpcDevice {
    IpcDevice(AddressSpace& memory, Checker* checker) : memory(memory, checker) {}
    IpcMemory memory;
    Publisher publisher;
};

}  // namespace keel::cpu::ipc
