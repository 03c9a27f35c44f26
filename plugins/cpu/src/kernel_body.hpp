// The body of a validated launch: what runs on the stream's worker.
//
// Like std::function<Result<void>(const KernelBuffers&)>, but a callable
// of up to kInline bytes is kept inline, so that a launch of a kernel that
// captures a few indices and scalars (fill, axpy) allocates nothing; a
// larger one (a lerp plan with its shapes) is kept on the heap.
//
// Move-only. Thread-safety: built on one thread, then sent to one worker.
#pragma once

#include <keel/result.hpp>

#include <cstddef>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>

namespace keel::cpu {

class KernelBuffers;

class KernelBody {
public:
    static constexpr std::size_t kInline = 48;

    KernelBody() noexcept = default;
    KernelBody(const KernelBody&) = delete;
    KernelBody& operator=(const KernelBody&) = delete;
    KernelBody(KernelBody&& other) noexcept { take(other); }
    KernelBody& operator=(KernelBody&& other) noexcept {
        if (this != &other) {
            reset();
            take(other);
        }
        return *this;
    }
    ~KernelBody() { reset(); }

    template <class F, class = std::enable_if_t<!std::is_same_v<std::decay_t<F>, KernelBody>>>
    KernelBody& operator=(F&& f) {  // throws std::bad_alloc for a callable kept on the heap
        reset();
        using T = std::decay_t<F>;
        if constexpr (kFits<T>) {
            ::new (static_cast<void*>(storage_)) T(std::forward<F>(f));
            ops_ = &kOps<T>;
        } else {
            ::new (static_cast<void*>(storage_)) Boxed<T>{std::make_unique<T>(std::forward<F>(f))};
            ops_ = &kOps<Boxed<T>>;
        }
        return *this;
    }
    KernelBody& operator=(std::nullptr_t) noexcept {
        reset();
        return *this;
    }

    [[nodiscard]] explicit operator bool() const noexcept { return ops_ != nullptr; }
    // Only on a non-empty body.
    Result<void> operator()(const KernelBuffers& buffers) const { return ops_->call(storage_, buffers); }

private:
    struct Ops {
        Result<void> (*call)(const void* self, const KernelBuffers& buffers);
        void (*relocate)(void* from, void* to) noexcept;  // move-construct at `to`, destroy `from`
        void (*destroy)(void* self) noexcept;
    };
    template <class T>
    struct Boxed {
        std::unique_ptr<T> callable;
        Result<void> operator()(const KernelBuffers& buffers) const { return (*callable)(buffers); }
    };
    template <class T>
    static constexpr bool kFits = sizeof(T) <= kInline && alignof(T) <= alignof(std::max_align_t) &&
                                  std::is_nothrow_move_constructible_v<T>;
    template <class T>
    static constexpr Ops kOps{
        [](const void* self, const KernelBuffers& buffers) -> Result<void> {
            return (*static_cast<const T*>(self))(buffers);
        },
        [](void* from, void* to) noexcept {
            T* source = static_cast<T*>(from);
            ::new (to) T(std::move(*source));
            source->~T();
        },
        [](void* self) noexcept { static_cast<T*>(self)->~T(); },
    };

    void reset() noexcept {
        if (ops_ != nullptr) std::exchange(ops_, nullptr)->destroy(storage_);
    }
    void take(KernelBody& other) noexcept {
        if (other.ops_ == nullptr) return;
        other.ops_->relocate(other.storage_, storage_);
        ops_ = std::exchange(other.ops_, nullptr);
    }

    alignas(std::max_align_t) std::byte storage_[kInline];
    const Ops* ops_ = nullptr;
};

}  // namespace keel::cpu
