// A static object that is never destroyed.
//
// Hosts keep keel objects in globals (frameworks keep their device state
// there), and those are destroyed while the process exits, in an order keel
// does not control: after keel's own function-local statics when they were
// made earlier. Whatever such a release needs (the plugin registry, the
// logger, the shared memory instances) therefore lives in a NoDestructor,
// which exit leaves alone. Use it only for function-local statics.
#pragma once

#include <new>
#include <type_traits>
#include <utility>

namespace keel::base {

template <class T>
class NoDestructor {
public:
    template <class... Args>
    explicit NoDestructor(Args&&... args) {
        ::new (static_cast<void*>(storage_)) T(std::forward<Args>(args)...);
    }
    NoDestructor(const NoDestructor&) = delete;
    NoDestructor& operator=(const NoDestructor&) = delete;

    [[nodiscard]] T& get() noexcept { return *std::launder(reinterpret_cast<T*>(storage_)); }
    [[nodiscard]] T* operator->() noexcept { return &get(); }
    [[nodiscard]] T& operator*() noexcept { return get(); }

private:
    alignas(T) unsigned char storage_[sizeof(T)];
};

static_assert(std::is_trivially_destructible_v<NoDestructor<int>>);

}  // namespace keel::base
