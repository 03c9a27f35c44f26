// A program that takes the value of an error, as a framework author's code
// might: it must stop with the error on stderr and a non-zero status, never
// crash silently or go on (ctest checks the output).
#include <keel/keel.hpp>

#include <cstdio>

int main() {
    keel::Device device = keel::Runtime::create().value().device("nosuch:0").value();
    std::printf("unreachable: got %s\n", device.name().c_str());
    return 0;
}
