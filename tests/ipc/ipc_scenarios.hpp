// The two-process scenarios every device with IPC memory and events runs
// alike (ipc_scenarios.cpp), parametrised by the device's name. Each test
// executable instantiates them for its device:
//   INSTANTIATE_TEST_SUITE_P(Devices, IpcEventAcrossProcesses, ::testing::Values("cpu:0"),
//                            keel::testing::ipc_device_name);
#pragma once

#include <gtest/gtest.h>

#include <string>

namespace keel::testing {

class IpcMemoryAcrossProcesses : public ::testing::TestWithParam<std::string> {};
class IpcEventAcrossProcesses : public ::testing::TestWithParam<std::string> {};

// "level_zero:0" -> "level_zero_0": the instance's name.
inline std::string ipc_device_name(const ::testing::TestParamInfo<std::string>& info) {
    std::string name = info.param;
    for (char& c : name)
        if (c == ':') c = '_';
    return name;
}

}  // namespace keel::testing
