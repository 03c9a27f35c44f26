// The kernels a plugin serves, as a table of definitions and one handle per
// device and kernel: what a keel_kernel points at, so that a launch can
// refuse a stream of another device. Immutable after construction: read
// from any thread; handles stay valid until it is destroyed (at
// plugin_shutdown).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace keel::plugin {

// `Def` has a `const char* name`; `Device` an `index()`, its position in
// the plugin's device list.
template <class Device, class Def>
class KernelTable {
public:
    struct Handle {
        const Device* device;
        const Def* def;
    };

    // `defs` in the order names() lists them.
    KernelTable(const std::vector<std::unique_ptr<Device>>& devices, std::vector<const Def*> defs)
        : defs_(std::move(defs)) {
        for (const auto& device : devices) {
            std::vector<Handle> row;
            for (const Def* def : defs_) row.push_back(Handle{device.get(), def});
            by_device_.push_back(std::move(row));
        }
    }
    KernelTable(const KernelTable&) = delete;
    KernelTable& operator=(const KernelTable&) = delete;
    KernelTable(KernelTable&&) = delete;
    KernelTable& operator=(KernelTable&&) = delete;
    ~KernelTable() = default;

    // The kernel named `name` on `device`, or null.
    [[nodiscard]] const Handle* find(const Device& device, std::string_view name) const noexcept {
        if (device.index() >= by_device_.size()) return nullptr;
        for (const Handle& h : by_device_[device.index()])
            if (name == h.def->name) return &h;
        return nullptr;
    }

    // "axpy, fill, lerp": for the message of a failed lookup.
    [[nodiscard]] std::string names() const {
        std::string out;
        for (const Def* def : defs_) {
            if (!out.empty()) out += ", ";
            out += def->name;
        }
        return out;
    }

private:
    std::vector<const Def*> defs_;
    std::vector<std::vector<Handle>> by_device_;  // [device index][kernel]
};

}  // namespace keel::plugin
