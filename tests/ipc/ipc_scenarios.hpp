// The two-process scenarios every device with IPC memory and events runs
// alike (ipc_scenarios.cpp), parametrised by the device's name. Each test
// executable instantiates them for its device:
//   INSTANTIATE_TEST_SUITE_P(Devices, IpcEventAcrossProcesses, ::testing::Values("cpu:0"),
//                            keel::testing::device_test_name);
#pragma once

#include <keel/testing/device_test_name.hpp>

#include <gtest/gtest.h>

#include <string>

namespace keel::testing {

class IpcMemoryAcrossProcesses : public ::testing::TestWithParam<std::string> {};
class IpcEventAcrossProcesses : public ::testing::TestWithParam<std::string> {};

}  // namespace keel::testing
