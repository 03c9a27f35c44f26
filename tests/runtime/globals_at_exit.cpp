// A program that keeps keel objects in globals, as frameworks keep their
// device state: they are destroyed while the process exits, after the
// plugins' (and their drivers') own static destructors have run, and must
// still be released cleanly (ctest checks that nothing is reported and the
// status is 0). The device is argv[1], cpu:0 by default.
#include <keel/keel.hpp>

#include <cstdio>
#include <optional>
#include <vector>

namespace {

struct Globals {
    std::optional<keel::Runtime> runtime;
    std::optional<keel::Stream> stream;
    std::optional<keel::MemoryPool> private_memory;
    std::optional<keel::Stream> private_stream;
    std::optional<keel::Buffer> buffer;
};
Globals globals;  // constructed before any plugin is loaded, so destroyed after them

}  // namespace

int main(int argc, char** argv) {
    const char* name = argc > 1 ? argv[1] : "cpu:0";
    globals.runtime.emplace(keel::Runtime::create().expect("loading plugins"));
    keel::Device device = globals.runtime->device(name).expect("the device to test");
    globals.stream.emplace(keel::Stream::create(device).expect("a stream"));
    globals.private_memory.emplace(keel::MemoryPool::create(device).expect("a private memory instance"));
    globals.private_stream.emplace(keel::Stream::create(*globals.private_memory).expect("a stream on it"));
    for (keel::Stream* s : {&*globals.stream, &*globals.private_stream}) {
        keel::Buffer held = keel::Buffer::allocate(*s, 1 << 20).expect("a cached buffer");
        std::vector<float> host(1 << 18, 1.0f);
        s->copy(held, host).expect("a staged copy");
        s->hold(std::move(held)).expect("a hold");
    }
    globals.buffer.emplace(keel::Buffer::allocate(*globals.stream, 4096).expect("a buffer kept to the end"));
    std::puts("exiting with keel objects in globals");
    return 0;
}
