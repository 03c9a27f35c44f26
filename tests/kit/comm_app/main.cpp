// Started by keel-launch: every rank adds its rank into one all_reduce on
// cpu:0 and checks the sum; exits 0 when it is right.
#include <keel/comm.hpp>
#include <keel/keel.hpp>

#include <cstdio>
#include <utility>
#include <vector>

int main() {
    auto fail = [](const keel::Error& e) {
        std::fprintf(stderr, "comm_app: %s\n", e.message().c_str());
        return 1;
    };
    auto runtime = keel::Runtime::create();
    if (!runtime.ok()) return fail(runtime.error());
    auto device = runtime->device("cpu:0");
    if (!device.ok()) return fail(device.error());
    auto stream = keel::Stream::create(*device);
    if (!stream.ok()) return fail(stream.error());
    auto comm = keel::Communicator::create_from_env(*device);
    if (!comm.ok()) return fail(comm.error());
    std::vector<float> values(1024, static_cast<float>(comm->rank() + 1));
    auto buffer = keel::Buffer::allocate(*stream, values.size() * sizeof(float));
    if (!buffer.ok()) return fail(buffer.error());
    if (auto r = stream->copy(*buffer, values); !r.ok()) return fail(r.error());
    if (auto r = comm->all_reduce(*stream, *buffer, KEEL_DTYPE_F32, keel::ReduceOp::sum); !r.ok()) return fail(r.error());
    auto out = stream->copy_to_vector<float>(*buffer);
    if (!out.ok()) return fail(out.error());
    auto got = std::move(*out).get();
    if (!got.ok()) return fail(got.error());
    const int n = comm->size();
    const float want = static_cast<float>(n * (n + 1) / 2);
    for (float v : *got)
        if (v != want) {
            std::fprintf(stderr, "comm_app: rank %d got %g, want %g\n", comm->rank(), static_cast<double>(v),
                         static_cast<double>(want));
            return 1;
        }
    std::printf("comm_app: rank %d of %d: all_reduce ok (%s)\n", comm->rank(), n, comm->engine().c_str());
    return 0;
}
