// The scaffolding of a plugin that finds its devices once, at its first
// keel_plugin_init: the state it holds until the last plugin_shutdown
// (counted: see SharedState), keel_plugin_init's checks, plugin_info,
// plugin_shutdown, and the entries that only list devices (device_count,
// device_get, device_properties, device_pageable_staging_stats). A plugin
// supplies only its vendor part, as a type:
//
//   struct Vendor {
//       using Device = ...;  // what a keel_device points at
//       using State = ...;   // a DeviceSet<Device> (devices(), status()) with
//                            // release_all() noexcept, run by the last
//                            // plugin_shutdown before the state goes
//       static constexpr const char* kDeviceType = "...";  // "<type>:<index>"
//       static constexpr const char* kVersion = "...";     // plugin_info's
//       // Discovery, on the first keel_plugin_init. Finding no device is no
//       // failure: a state with none, and a status saying why.
//       static Result<std::unique_ptr<State>> make_state();
//       // Optional: the settings it takes as options (keel.h "Plugin
//       // options"), read by make_state and later through options().
//       static constexpr OptionSpec kOptions[] = {...};
//   };
//
// and puts DevicePlugin<Vendor>'s entries in its table beside its own.
//
// Threads: the entries may be called from any thread between init and the
// last plugin_shutdown (state() reads without a lock); init and shutdown
// are serialised with each other.
#pragma once

#include <keel/keel.h>
#include <keel/plugin/boundary.hpp>
#include <keel/plugin/handles.hpp>
#include <keel/plugin/host_log.hpp>
#include <keel/plugin/negotiation.hpp>
#include <keel/plugin/options.hpp>
#include <keel/plugin/shared_state.hpp>
#include <keel/result.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>

namespace keel::plugin {

template <class Vendor>
class DevicePlugin {
public:
    using Device = typename Vendor::Device;
    using State = typename Vendor::State;

    DevicePlugin() = delete;

    // Valid between an init and the last plugin_shutdown, which the ABI
    // guarantees for every entry.
    [[nodiscard]] static const State& state() noexcept { return state_.get(); }
    // The settings of the first keel_plugin_init (the one that made the
    // state), from its options or else the variables; same validity. A later
    // init while the state lives is still refused an option it does not
    // take, but its settings do not change the devices already made.
    [[nodiscard]] static const Options& options() noexcept { return options_; }

    // keel_plugin_init: checks the runtime's offer, installs logging, makes
    // the state on the first call (later ones count), hands out `table`.
    [[nodiscard]] static keel_error* init(const keel_host_services* host, const keel_plugin_api** out_api,
                                          const keel_plugin_api* table) noexcept {
        return entry(Vendor::kDeviceType, "keel_plugin_init", [&]() -> Result<void> {
            KEEL_TRY(check_host_services(host));
            KEEL_TRY(require_non_null(out_api, "out_api"));
            KEEL_TRY_ASSIGN(Options given, Options::read(host, option_specs()));
            HostLog::install(host);
            Result<void> acquired = state_.acquire([&] {
                options_ = std::move(given);
                return discover();
            });
            if (!acquired.ok()) {
                HostLog::uninstall();
                return acquired;
            }
            *out_api = table;
            return ok();
        });
    }

    // plugin_option_info: what options() says of setting `index`.
    static keel_error* plugin_option_info(std::uint32_t index, keel_option_info* out) noexcept {
        return entry(Vendor::kDeviceType, "plugin_option_info",
                     [&]() -> Result<void> { return options_.describe(index, out); });
    }

    static keel_error* plugin_info(keel_plugin_info* out) noexcept {
        return entry(Vendor::kDeviceType, "plugin_info", [&]() -> Result<void> {
            return write_plugin_info(out, Vendor::kDeviceType, Vendor::kVersion, state().status().c_str());
        });
    }

    static void plugin_shutdown() noexcept {
        if (state_.release([](State& s) { s.release_all(); })) HostLog::uninstall();
    }

    static keel_error* device_count(std::uint32_t* out_count) noexcept {
        return entry(Vendor::kDeviceType, "device_count", [&]() -> Result<void> {
            KEEL_TRY(require_non_null(out_count, "out_count"));
            *out_count = static_cast<std::uint32_t>(state().devices().size());
            return ok();
        });
    }

    static keel_error* device_get(std::uint32_t index, keel_device* out_device) noexcept {
        return entry(Vendor::kDeviceType, "device_get", [&]() -> Result<void> {
            KEEL_TRY(require_non_null(out_device, "out_device"));
            const auto& devices = state().devices();
            if (index >= devices.size()) {
                std::string message = "no device " + std::string(Vendor::kDeviceType) + ":" + std::to_string(index) +
                                      " (" + std::to_string(devices.size()) + " device(s))";
                if (!state().status().empty()) message += ": " + state().status();
                return Error(KEEL_STATUS_NOT_FOUND, std::move(message));
            }
            *out_device = handle_of<keel_device>(devices[index].get());
            return ok();
        });
    }

    static keel_error* device_properties(keel_device device, keel_device_properties* out) noexcept {
        return entry(Vendor::kDeviceType, "device_properties", [&]() -> Result<void> {
            KEEL_TRY_ASSIGN(Device * d, object_from<Device>(device, "device"));
            return write_device_properties(out, d->properties());
        });
    }

    // For a Device that stages pageable copies (its pageable_staging()).
    static keel_error* device_pageable_staging_stats(keel_device device, keel_pageable_staging_stats* out) noexcept {
        return entry(Vendor::kDeviceType, "device_pageable_staging_stats", [&]() -> Result<void> {
            KEEL_TRY_ASSIGN(Device * d, object_from<Device>(device, "device"));
            return d->pageable_staging().write_stats(out);
        });
    }

private:
    static Result<std::unique_ptr<State>> discover() {
        KEEL_TRY_ASSIGN(std::unique_ptr<State> made, Vendor::make_state());
        made->log_found(Vendor::kDeviceType);
        return made;
    }

    static std::span<const OptionSpec> option_specs() noexcept {
        if constexpr (requires { Vendor::kOptions; })
            return Vendor::kOptions;
        else
            return {};
    }

    static constinit inline SharedState<State> state_;
    // Written with the state, under its lock; read-only until the last release.
    static inline Options options_;
};

}  // namespace keel::plugin
