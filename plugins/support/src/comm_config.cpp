#include <keel/plugin/comm_config.hpp>

#include <keel/plugin/boundary.hpp>

#include <keel/base/dtype.hpp>

namespace keel::plugin {
namespace {

void receive(void* sink, const void* value, std::uint64_t size) {
    static_cast<std::string*>(sink)->assign(static_cast<const char*>(value), size);
}

}  // namespace

std::string CommConfig::where() const {
    return "comm '" + key_prefix + "' rank " + std::to_string(rank) + "/" + std::to_string(size);
}

Result<void> CommConfig::set(std::string_view key, std::string_view value) const {
    const std::string full = key_prefix + "/" + std::string(key);
    return take_c_error(store->set(store->context, full.c_str(), value.data(), value.size()));
}

Result<std::string> CommConfig::get(std::string_view key) const {
    const std::string full = key_prefix + "/" + std::string(key);
    std::string value;
    KEEL_TRY(take_c_error(store->get(store->context, full.c_str(), timeout_ms, &receive, &value)));
    return value;
}

Result<CommConfig> read_comm_config(const keel_comm_config* config) {
    if (config == nullptr || config->struct_size < KEEL_COMM_CONFIG_STRUCT_SIZE)
        return Error(KEEL_STATUS_INVALID_ARGUMENT, "config is null or shorter than keel_comm_config of ABI 1.4");
    const keel_comm_store* store = config->store;
    if (store == nullptr || store->struct_size < KEEL_COMM_STORE_STRUCT_SIZE || store->set == nullptr ||
        store->get == nullptr)
        return Error(KEEL_STATUS_INVALID_ARGUMENT, "config->store is null, short, or lacks set/get");
    if (config->size < 1 || config->rank < 0 || config->rank >= config->size)
        return Error(KEEL_STATUS_INVALID_ARGUMENT, "rank " + std::to_string(config->rank) + " of size " +
                                                       std::to_string(config->size) + ": expected 0 <= rank < size");
    if (config->key_prefix == nullptr || *config->key_prefix == '\0')
        return Error(KEEL_STATUS_INVALID_ARGUMENT, "config->key_prefix is empty");
    if (config->timeout_ms == 0) return Error(KEEL_STATUS_INVALID_ARGUMENT, "config->timeout_ms is 0");
    CommConfig c;
    c.rank = config->rank;
    c.size = config->size;
    c.timeout_ms = config->timeout_ms;
    c.key_prefix = config->key_prefix;
    c.store = store;
    return c;
}

Result<std::uint64_t> reduction_element_size(keel_dtype dtype, keel_reduce_op op) {
    const std::size_t es = dtype_size(dtype);
    if (es == 0) return Error(KEEL_STATUS_INVALID_ARGUMENT, "dtype " + std::to_string(dtype) + " cannot be reduced");
    if (static_cast<std::uint32_t>(op) > KEEL_REDUCE_AVG)
        return Error(KEEL_STATUS_INVALID_ARGUMENT, "unknown reduction " + std::to_string(op));
    return static_cast<std::uint64_t>(es);
}

}  // namespace keel::plugin
