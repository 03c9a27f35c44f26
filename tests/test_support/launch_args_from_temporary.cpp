// Must NOT compile: the pointer of a temporary LaunchArgs would dangle at
// the end of the statement (a test expects the compiler to refuse it).
#include <keel/testing/launch_args.hpp>

const keel_launch_args* dangling() { return keel::testing::LaunchArgs().scalar_f32(1.0f).ints({2, 3}).get(); }
