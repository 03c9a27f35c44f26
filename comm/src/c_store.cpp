#include "c_store.hpp"

#include <keel/plugin/boundary.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <span>

namespace keel::comm {
namespace {

keel_error* set(void* context, const char* key, const void* value, std::uint64_t size) noexcept {
    return plugin::entry("keel::comm store set", [&]() -> Result<void> {
        if (key == nullptr || (value == nullptr && size != 0))
            return Error(KEEL_STATUS_INVALID_ARGUMENT, "null key or value");
        const Store& store = *static_cast<const Store*>(context);
        return store.set(key, std::span(static_cast<const std::byte*>(value), size));
    });
}

keel_error* get(void* context, const char* key, std::uint64_t timeout_ms, keel_comm_store_receive_fn receive,
                void* sink) noexcept {
    return plugin::entry("keel::comm store get", [&]() -> Result<void> {
        if (key == nullptr || receive == nullptr) return Error(KEEL_STATUS_INVALID_ARGUMENT, "null key or receive");
        const Store& store = *static_cast<const Store*>(context);
        const auto timeout = std::chrono::milliseconds(
            static_cast<std::chrono::milliseconds::rep>(std::min<std::uint64_t>(timeout_ms, INT64_MAX / 2)));
        KEEL_TRY_ASSIGN(std::vector<std::byte> value, store.get(key, timeout));
        receive(sink, value.data(), value.size());
        return {};
    });
}

}  // namespace

CStore::CStore(Store store) : store_(std::move(store)) {
    table_.struct_size = KEEL_COMM_STORE_STRUCT_SIZE;
    table_.context = &store_;
    table_.set = &set;
    table_.get = &get;
}

}  // namespace keel::comm
