// Must NOT compile: a temporary KernelArgs' int arrays are gone by the next
// statement, so its encoded list must not be taken (a test expects the
// compiler to refuse it).
#include <keel/kernel.hpp>

std::vector<keel_kernel_arg> dangling() { return keel::KernelArgs().ints({2, 3}).encode(); }
