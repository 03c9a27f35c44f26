// A program that keeps keel objects in globals, as frameworks keep their
// device state: they are destroyed while the process exits, after the
// plugins' (and their drivers') own static destructors have run, and must
// still be released cleanly (ctest checks that nothing is reported and the
// status is 0). The device is argv[1], cpu:0 by default. With a second
// device of another plugin (argv[2]), streams of both wait for each other
// (bridged waits, which leave origins behind) before the exit.
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
    std::optional<keel::Fence> fence;  // given back to its memory instance's tracker at exit
    std::optional<keel::Stream> other_stream;  // on argv[2]
    std::optional<keel::Event> other_event;
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
    // A fence of one memory instance kept, then one of another made last.
    globals.fence.emplace(globals.private_stream->fence().expect("a fence kept to the end"));
    (void)globals.stream->fence().expect("a fence of the shared instance");
    if (argc > 2) {
        keel::Device other = globals.runtime->device(argv[2]).expect("the second device");
        globals.other_stream.emplace(keel::Stream::create(other).expect("a stream of the second device"));
        globals.stream->memset(*globals.buffer, 1).expect("work to wait for");
        globals.other_stream->order_after(*globals.stream).expect("a bridged wait one way");
        globals.other_event.emplace(keel::Event::create(other).expect("an event of the second device"));
        globals.other_event->record(*globals.other_stream).expect("a record");
        globals.private_stream->wait(*globals.other_event).expect("a bridged wait the other way");
        globals.stream->order_after(*globals.other_stream).expect("and back");
    }
    std::puts("exiting with keel objects in globals");
    return 0;
}
