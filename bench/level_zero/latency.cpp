// keel-level-zero-latency: what the Level Zero plugin's emulated pieces cost
// next to a native operation, in one run on one device:
//   - a 4-byte memset, then stream_synchronize        (native: one command)
//   - a host function, then stream_synchronize        (emulated: host worker)
//   - memset, host function, memset, synchronize     (device -> host -> device)
//   - a 4 KiB copy from pinned memory, synchronize   (native)
//   - a 4 KiB copy from pageable memory, synchronize (emulated: staged)
// Each row is the median of many rounds, and its ratio to the first row.
//
//   keel-level-zero-latency [rounds]       (default 2000)
// Runs on level_zero:0. Without Intel hardware, point the loader at the
// test driver: ZE_ENABLE_ALT_DRIVERS=<build>/testing/fake_level_zero/libkeel_fake_ze.so
// (then the figures are the plugin's and the fake driver's, not a GPU's).
#include <keel/keel.h>
#include <keel/testing/loaded_plugin.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

bool check(keel_error* e, const char* what) {
    const auto error = keel::testing::take(e);
    if (error) std::fprintf(stderr, "%s: %s\n", what, error->message.c_str());
    return !error;
}

double median_us(int rounds, const std::function<bool()>& round) {
    std::vector<double> us;
    us.reserve(static_cast<std::size_t>(rounds));
    for (int i = 0; i < rounds; ++i) {
        const auto t0 = Clock::now();
        if (!round()) std::exit(1);
        us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
    }
    std::nth_element(us.begin(), us.begin() + static_cast<std::ptrdiff_t>(us.size() / 2), us.end());
    return us[us.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
    const int rounds = argc > 1 ? std::max(1, std::atoi(argv[1])) : 2000;
    keel::testing::LoadedPlugin plugin(
        keel::testing::find_plugin(keel::env::Var::test_level_zero_plugin, "../libkeel_level_zero.so", KEEL_LEVEL_ZERO_PLUGIN_PATH),
        keel::testing::LoadedPlugin::Options{{}, KEEL_ABI_VERSION_MAJOR, KEEL_LOG_ERROR, true});
    if (plugin.init_error()) {
        std::fprintf(stderr, "cannot load the plugin: %s\n", plugin.init_error()->message.c_str());
        return 1;
    }
    if (plugin.device_count() == 0) {
        std::printf("no Level Zero device: %s\n", plugin.status().c_str());
        return 0;
    }
    const keel_plugin_api* api = &plugin.api();
    const keel_device device = plugin.device();
    keel_device_properties props{};
    props.struct_size = KEEL_DEVICE_PROPERTIES_STRUCT_SIZE;
    keel_stream s = nullptr;
    keel_device_addr buf = 0;
    void* pinned = nullptr;
    if (!check(api->device_properties(device, &props), "properties") ||
        !check(api->stream_create(device, 0, &s), "stream_create") ||
        !check(api->device_alloc(device, 4096, &buf), "device_alloc") ||
        !check(api->host_alloc(device, 4096, &pinned), "host_alloc"))
        return 1;
    std::vector<unsigned char> pageable(4096, 1);
    const keel_host_fn nothing = [](void*, keel_status) {};
    const auto memset4 = [&] { return check(api->memset_d8(s, buf, 1, 4), "memset_d8"); };
    const auto host_fn = [&] { return check(api->stream_enqueue_host_func(s, nothing, nullptr), "host func"); };
    const auto sync = [&] { return check(api->stream_synchronize(s), "stream_synchronize"); };

    struct Row {
        const char* what;
        double us;
    };
    std::vector<Row> rows;
    rows.push_back({"memset 4 B + synchronize", median_us(rounds, [&] { return memset4() && sync(); })});
    rows.push_back({"host function + synchronize", median_us(rounds, [&] { return host_fn() && sync(); })});
    rows.push_back({"memset, host function, memset + synchronize",
                    median_us(rounds, [&] { return memset4() && host_fn() && memset4() && sync(); })});
    rows.push_back({"4 KiB h2d from pinned + synchronize", median_us(rounds, [&] {
                        return check(api->memcpy_h2d(s, buf, pinned, 4096), "memcpy_h2d") && sync();
                    })});
    rows.push_back({"4 KiB h2d from pageable + synchronize", median_us(rounds, [&] {
                        return check(api->memcpy_h2d(s, buf, pageable.data(), 4096), "memcpy_h2d") && sync();
                    })});

    std::printf("level_zero:0 %s, %d rounds, median per round\n\n", props.name, rounds);
    std::printf("%-46s %10s %8s\n", "operation", "us", "ratio");
    for (const Row& r : rows) std::printf("%-46s %10.1f %8.2f\n", r.what, r.us, r.us / rows[0].us);

    (void)check(api->host_free(device, pinned), "host_free");
    (void)check(api->device_free(device, buf), "device_free");
    (void)check(api->stream_destroy(s), "stream_destroy");
    return 0;
}
