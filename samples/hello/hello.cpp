// keel-hello: the smallest complete keel program. Picks a device by name,
// copies two vectors to it, runs the `axpy` kernel (y = alpha * x + y), copies
// the result back, checks it on the host and says what it did.
//
//   keel-hello [--device cpu:0] [--count 1000000]
#include <keel/keel.hpp>

#include <keel/tools/cli.hpp>

#include <cstdio>
#include <optional>
#include <string>
#include <vector>

namespace {

// Stops the program with the error, saying which step failed.
template <class T>
T check(keel::Result<T> r, const char* step) {
    if (!r.ok()) {
        std::fprintf(stderr, "keel-hello: %s failed: %s: %s\n", step,
                     keel::status_name(r.error().code()), r.error().message().c_str());
        std::exit(1);
    }
    if constexpr (!std::is_void_v<T>) return std::move(r).value();
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"keel-hello: the smallest complete keel program. Copies two vectors to a device, runs\n"
                 "the axpy kernel there (y = alpha * x + y), copies y back and checks every element.",
                 "keel-hello"};
    keel::cli::show_defaults(app);
    std::string device_name = "cpu:0";
    std::size_t count = 1'000'000;
    float alpha = 2.0f;
    app.add_option("--device", device_name, "Device to run on (keel-info lists them)");
    // Two vectors on the host and two on the device: 1 GiB each at most.
    app.add_option("--count", count, "Number of float elements (1 .. 268435456)")
        ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 28));
    app.add_option("--alpha", alpha, "The a in y = a * x + y");
    if (const std::optional<int> code = keel::cli::parse(app, argc, argv)) return *code;

    keel::Runtime runtime = check(keel::Runtime::create(), "loading the plugins");
    keel::Device device = check(runtime.device(device_name), "finding the device");
    std::printf("keel-hello on %s (%s, %s)\n", device.name().c_str(), device.properties().name.c_str(),
                device.properties().vendor.c_str());

    const std::uint64_t bytes = count * sizeof(float);
    std::vector<float> x(count), y(count);
    for (std::size_t i = 0; i < count; ++i) {
        x[i] = static_cast<float>(i % 1000);
        y[i] = 1.0f;
    }

    keel::Stream stream = check(keel::Stream::create(device), "creating a stream");
    keel::Buffer dx = check(keel::Buffer::allocate(stream, bytes), "allocating x");
    keel::Buffer dy = check(keel::Buffer::allocate(stream, bytes), "allocating y");
    keel::Kernel axpy = check(keel::Kernel::find(device, "axpy"), "finding kernel axpy");

    // Staged: x and y may change or go as soon as these return.
    check(stream.copy(dx, x), "copying x to the device");
    check(stream.copy(dy, y), "copying y to the device");
    std::printf("  copied x and y to %s: 2 x %zu floats (%llu bytes each)\n", device.name().c_str(),
                count, static_cast<unsigned long long>(bytes));

    check(stream.launch(axpy, keel::KernelArgs()
                                  .scalar(alpha)
                                  .buffer(dx, KEEL_DTYPE_F32)
                                  .buffer(dy, KEEL_DTYPE_F32)),
          "launching axpy");
    std::printf("  launched axpy: y = %g * x + y\n", static_cast<double>(alpha));

    keel::HostFuture<float> back = check(stream.copy_to_vector<float>(dy), "copying y back");
    const std::vector<float> result = check(std::move(back).get(), "waiting for y");
    std::printf("  copied y back and waited for it\n");

    std::size_t wrong = 0;
    for (std::size_t i = 0; i < count; ++i)
        if (result[i] != alpha * x[i] + y[i]) ++wrong;
    if (wrong != 0) {
        std::printf("  FAILED: %zu of %zu elements are wrong (e.g. y[1] = %g, expected %g)\n", wrong,
                    count, static_cast<double>(result[1]), static_cast<double>(alpha * x[1] + y[1]));
        return 1;
    }
    std::printf("  verified all %zu elements on the host (y[1] = %g, y[%zu] = %g)\n", count,
                static_cast<double>(result[1]), count - 1, static_cast<double>(result[count - 1]));
    std::printf("OK\n");
    return 0;
}
