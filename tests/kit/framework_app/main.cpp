// A framework's first program against an installed keel: find a device,
// round-trip data through it, run a kernel, print what it saw.
#include <keel/keel.hpp>

#include <cstdio>
#include <vector>

int main(int argc, char** argv) {
    const char* name = argc > 1 ? argv[1] : "cpu:0";
    keel::Runtime runtime = keel::Runtime::create().expect("loading plugins");
    keel::Device device = runtime.device(name).expect("finding the device");
    keel::Stream stream = keel::Stream::create(device).expect("creating a stream");
    std::vector<float> x(1000, 2.0f), y(1000, 1.0f);
    keel::Buffer dx = keel::Buffer::allocate(stream, x.size() * sizeof(float)).expect("allocating x");
    keel::Buffer dy = keel::Buffer::allocate(stream, y.size() * sizeof(float)).expect("allocating y");
    stream.copy(dx, x).expect("copying x");
    stream.copy(dy, y).expect("copying y");
    keel::Kernel axpy = keel::Kernel::find(device, "axpy").expect("finding axpy");
    stream.launch(axpy, keel::KernelArgs().scalar(3.0f).buffer(dx, KEEL_DTYPE_F32).buffer(dy, KEEL_DTYPE_F32))
        .expect("launching axpy");
    std::vector<float> out = stream.copy_to_vector<float>(dy).expect("copying back").get().expect("waiting");
    for (float v : out)
        if (v != 7.0f) {
            std::printf("wrong result %g\n", static_cast<double>(v));
            return 1;
        }
    std::printf("keel %s: axpy on %s (%s) verified\n", keel::runtime_version(), device.name().c_str(),
                device.properties().name.c_str());
    return 0;
}
