// The instance name of a test parametrised by a device's name.
#pragma once

#include <gtest/gtest.h>

#include <string>

namespace keel::testing {

// "cpu:0" -> "cpu_0", for test instance names.
inline std::string device_test_name(const ::testing::TestParamInfo<std::string>& info) {
    std::string name = info.param;
    for (char& c : name)
        if (c == ':') c = '_';
    return name;
}

}  // namespace keel::testing
