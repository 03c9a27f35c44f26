// The communication entries of keel.h 1.4, called through the C ABI on a
// one-rank communicator: every plugin that offers the set must run a group
// of one (every operation then copies its input to its output). A plugin
// without the set, one declaring an older minor, and one whose engine
// declines the group (UNIMPLEMENTED: e.g. the CUDA plugin without NCCL) are
// skipped with the reason. That the set is all or none is checked from the
// table (cts/table_check.cpp).
#include "conformance.hpp"

#include <keel/c_error.hpp>
#include <keel/plugin/comm_entries.hpp>
#include <keel/plugin_table.hpp>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <string>

namespace keel::conformance {
namespace {

// An in-memory keel_comm_store that remembers the keys it was given.
class MemoryStore {
public:
    MemoryStore() {
        table_.struct_size = KEEL_COMM_STORE_STRUCT_SIZE;
        table_.context = this;
        table_.set = &set;
        table_.get = &get;
    }
    MemoryStore(const MemoryStore&) = delete;
    MemoryStore& operator=(const MemoryStore&) = delete;

    [[nodiscard]] const keel_comm_store* table() const { return &table_; }
    [[nodiscard]] std::vector<std::string> keys() const {
        std::lock_guard lock(mutex_);
        std::vector<std::string> out;
        for (const auto& [k, v] : values_) out.push_back(k);
        return out;
    }

private:
    static keel_error* set(void* context, const char* key, const void* value, std::uint64_t size) {
        auto* self = static_cast<MemoryStore*>(context);
        {
            std::lock_guard lock(self->mutex_);
            self->values_[key].assign(static_cast<const char*>(value), size);
        }
        self->cv_.notify_all();
        return nullptr;
    }
    static keel_error* get(void* context, const char* key, std::uint64_t timeout_ms,
                           keel_comm_store_receive_fn receive, void* sink) {
        auto* self = static_cast<MemoryStore*>(context);
        std::unique_lock lock(self->mutex_);
        if (!self->cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms),
                                [&] { return self->values_.count(key) != 0; }))
            return missing();
        const std::string& v = self->values_[key];
        receive(sink, v.data(), v.size());
        return nullptr;
    }
    static keel_error* missing() {
        static keel_error e{KEEL_ERROR_STRUCT_SIZE, KEEL_STATUS_UNAVAILABLE, "[test store] key not set in time",
                            [](keel_error*) {}};
        return &e;
    }

    keel_comm_store table_{};
    mutable std::mutex mutex_;
    std::condition_variable cv_;
    std::map<std::string, std::string> values_;
};

keel_comm_config one_rank_config(const MemoryStore& store, const char* prefix) {
    keel_comm_config c{};
    c.struct_size = KEEL_COMM_CONFIG_STRUCT_SIZE;
    c.rank = 0;
    c.size = 1;
    c.timeout_ms = 10000;
    c.key_prefix = prefix;
    c.store = store.table();
    return c;
}

// Owns a keel_comm; comm_destroy at the end.
struct CommHandle {
    const keel_plugin_api* api = nullptr;
    keel_comm comm = nullptr;
    CommHandle() = default;
    CommHandle(const CommHandle&) = delete;
    CommHandle& operator=(const CommHandle&) = delete;
    ~CommHandle() {
        if (comm != nullptr) (void)take_c_error(api->comm_destroy(comm));
    }
};

std::vector<float> floats(std::size_t n, float first) {
    std::vector<float> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = first + static_cast<float>(i);
    return v;
}

Bytes bytes_of(const std::vector<float>& v) {
    Bytes b(v.size() * sizeof(float));
    std::memcpy(b.data(), v.data(), b.size());
    return b;
}

}  // namespace

// The suite's skip for a device whose plugin has no set, and the one-rank
// communicator otherwise (skipped when the engine declines it).
#define KEEL_COMM_OR_SKIP(handle, store, prefix)                                                              \
    const keel_plugin_api& api = plugin_table(device());                                                       \
    if (!plugin::has_comm_set(api))                                                                                    \
        GTEST_SKIP() << device().name() << " has no communication entries (optional set of ABI 1.4 absent)"; \
    CommHandle handle;                                                                                         \
    handle.api = &api;                                                                                         \
    {                                                                                                          \
        const keel_comm_config config = one_rank_config(store, prefix);                                        \
        Result<void> created = take_c_error(api.comm_create(plugin_handle(device()), &config, &handle.comm));           \
        if (!created.ok() && created.error().code() == KEEL_STATUS_UNIMPLEMENTED)                              \
            GTEST_SKIP() << device().name() << "'s engine declines a one-rank group: "                         \
                         << created.error().message();                                                         \
        KEEL_ASSERT_OK(created);                                                                               \
        ASSERT_NE(handle.comm, nullptr);                                                                       \
    }

TEST_P(Conformance, AOneRankCommunicatorRunsEveryCollectiveOnItsStream) {
    KEEL_RULE(4, "comm.collectives");
    MemoryStore store;
    KEEL_COMM_OR_SKIP(comm, store, "cts/collectives");
    constexpr std::size_t n = 37;
    KEEL_ASSERT_OK_AND_ASSIGN(Stream s, Stream::create(device()));
    KEEL_ASSERT_OK_AND_ASSIGN(Buffer in, Buffer::allocate(s, n * sizeof(float)));
    const std::vector<float> values = floats(n, 1.5f);
    KEEL_ASSERT_OK(s.copy(in.view(), values));
    struct Case {
        const char* what;
        std::function<keel_error*(keel_device_addr, keel_device_addr)> run;
    };
    const keel_stream cs = plugin_handle(s);
    const std::vector<Case> cases = {
        {"all_reduce sum", [&](auto i, auto o) { return api.comm_all_reduce(comm.comm, cs, i, o, n, KEEL_DTYPE_F32, KEEL_REDUCE_SUM); }},
        {"all_reduce avg", [&](auto i, auto o) { return api.comm_all_reduce(comm.comm, cs, i, o, n, KEEL_DTYPE_F32, KEEL_REDUCE_AVG); }},
        {"broadcast", [&](auto i, auto o) { return api.comm_broadcast(comm.comm, cs, i, o, n * sizeof(float), 0); }},
        {"all_gather", [&](auto i, auto o) { return api.comm_all_gather(comm.comm, cs, i, o, n * sizeof(float)); }},
        {"reduce_scatter max", [&](auto i, auto o) { return api.comm_reduce_scatter(comm.comm, cs, i, o, n, KEEL_DTYPE_F32, KEEL_REDUCE_MAX); }},
    };
    for (const Case& c : cases) {
        KEEL_ASSERT_OK_AND_ASSIGN(Buffer out, Buffer::allocate(s, n * sizeof(float)));
        KEEL_ASSERT_OK(s.memset(out.view(), 0));
        KEEL_ASSERT_OK(take_c_error(c.run(in.view().address(), out.view().address()))) << c.what;
        KEEL_ASSERT_OK_AND_ASSIGN(Bytes got, read_bytes(s, out.view()));
        EXPECT_EQ(got, bytes_of(values)) << c.what << " out of place";
        // In place: the same address for in and out.
        KEEL_ASSERT_OK(s.copy(out.view(), in.view()));
        KEEL_ASSERT_OK(take_c_error(c.run(out.view().address(), out.view().address()))) << c.what;
        KEEL_ASSERT_OK_AND_ASSIGN(Bytes again, read_bytes(s, out.view()));
        EXPECT_EQ(again, bytes_of(values)) << c.what << " in place";
    }
    KEEL_ASSERT_OK(s.synchronize());
}

TEST_P(Conformance, ACommunicatorMeetsItsPeersThroughTheStoreUnderItsKeyPrefix) {
    KEEL_RULE(4, "comm.key-prefix");
    MemoryStore store;
    KEEL_COMM_OR_SKIP(comm, store, "cts/prefix");
    for (const std::string& key : store.keys())
        EXPECT_EQ(key.rfind("cts/prefix/", 0), 0u) << "a key outside the prefix: " << key;
}

TEST_P(Conformance, CommunicationEntriesRejectBadInputAndEnqueueNothing) {
    KEEL_RULE(4, "comm.errors-at-call");
    MemoryStore store;
    KEEL_COMM_OR_SKIP(comm, store, "cts/bad");
    const auto expect_invalid = [](keel_error* e, const char* what) {
        Result<void> r = take_c_error(e);
        ASSERT_FALSE(r.ok()) << what << " was accepted";
        EXPECT_EQ(r.error().code(), KEEL_STATUS_INVALID_ARGUMENT) << what << ": " << r.error().message();
        EXPECT_NE(r.error().message(), "") << what;
    };
    keel_comm out = nullptr;
    expect_invalid(api.comm_create(plugin_handle(device()), nullptr, &out), "a null config");
    keel_comm_config bad = one_rank_config(store, "cts/bad-rank");
    bad.rank = 1;
    expect_invalid(api.comm_create(plugin_handle(device()), &bad, &out), "rank 1 of size 1");
    bad = one_rank_config(store, "");
    expect_invalid(api.comm_create(plugin_handle(device()), &bad, &out), "an empty key prefix");
    EXPECT_EQ(out, nullptr) << "a failed comm_create wrote its output";

    KEEL_ASSERT_OK_AND_ASSIGN(Stream s, Stream::create(device()));
    KEEL_ASSERT_OK_AND_ASSIGN(Buffer b, Buffer::allocate(s, 64));
    const keel_device_addr a = b.view().address();
    expect_invalid(api.comm_broadcast(comm.comm, plugin_handle(s), a, a, 64, 1), "root 1 of a group of one");
    keel_p2p_op to_self{KEEL_P2P_OP_STRUCT_SIZE, KEEL_P2P_SEND, 0, a, 64};
    expect_invalid(api.comm_send_recv(comm.comm, plugin_handle(s), &to_self, 1), "a send to oneself");
    keel_p2p_op outside{KEEL_P2P_OP_STRUCT_SIZE, KEEL_P2P_RECV, 5, a, 64};
    expect_invalid(api.comm_send_recv(comm.comm, plugin_handle(s), &outside, 1), "a receive from rank 5 of 1");
    expect_invalid(api.comm_all_reduce(comm.comm, plugin_handle(s), a, a, 16, KEEL_DTYPE_INVALID, KEEL_REDUCE_SUM),
                   "dtype INVALID");
    expect_invalid(api.comm_all_reduce(comm.comm, plugin_handle(s), a, a, 16, KEEL_DTYPE_F32,
                                       static_cast<keel_reduce_op>(77)),
                   "reduction 77");
    expect_invalid(api.comm_all_reduce(nullptr, plugin_handle(s), a, a, 16, KEEL_DTYPE_F32, KEEL_REDUCE_SUM),
                   "a null communicator");
    expect_invalid(api.comm_all_gather(comm.comm, nullptr, a, a, 16), "a null stream");
    if (const Device* other = other_device(); other != nullptr) {
        KEEL_ASSERT_OK_AND_ASSIGN(Stream elsewhere, Stream::create(*other));
        expect_invalid(api.comm_all_gather(comm.comm, plugin_handle(elsewhere), a, a, 16), "a stream of another device");
    }
    // count == 0 enqueues nothing and succeeds.
    KEEL_EXPECT_OK(take_c_error(api.comm_send_recv(comm.comm, plugin_handle(s), nullptr, 0)));
    KEEL_EXPECT_OK(s.synchronize());
}

TEST_P(Conformance, SizedSendRecvReadsEntriesOpSizeApartAndRefusesFieldsItDoesNotKnow) {
    KEEL_RULE(5, "comm.send-recv-sized");
    MemoryStore store;
    KEEL_COMM_OR_SKIP(comm, store, "cts/sized");
    ASSERT_NE(api.comm_send_recv_sized, nullptr) << "a 1.5 plugin with the comm_* set lacks comm_send_recv_sized";
    KEEL_ASSERT_OK_AND_ASSIGN(Stream s, Stream::create(device()));
    KEEL_ASSERT_OK_AND_ASSIGN(Buffer b, Buffer::allocate(s, 64));
    const keel_device_addr a = b.view().address();
    // keel_p2p_op as a newer keel.h may make it: one more field.
    struct Longer {
        keel_p2p_op op;
        std::uint64_t newer = 0;
    };
    Longer ops[2] = {{{sizeof(Longer), KEEL_P2P_SEND, 0, a, 64}, 0}, {{sizeof(Longer), KEEL_P2P_RECV, 0, a, 64}, 0}};
    const auto code_of = [&](std::uint32_t count, std::size_t op_size) {
        Result<void> r = take_c_error(api.comm_send_recv_sized(comm.comm, plugin_handle(s), &ops[0].op, count, op_size));
        return r.ok() ? KEEL_STATUS_OK : r.error().code();
    };
    KEEL_EXPECT_OK(take_c_error(api.comm_send_recv_sized(comm.comm, plugin_handle(s), nullptr, 0, sizeof(Longer))));
    EXPECT_EQ(code_of(1, 16), KEEL_STATUS_INVALID_ARGUMENT) << "an op_size shorter than keel.h 1.4's keel_p2p_op";
    // The second entry, found op_size apart, asks for a field this plugin
    // cannot know: refused as such, not read as a first entry's neighbour.
    ops[1].newer = 1;
    EXPECT_EQ(code_of(2, sizeof(Longer)), KEEL_STATUS_UNIMPLEMENTED) << "a non-zero field beyond keel_p2p_op";
    ops[1].newer = 0;
    ops[1].op.struct_size = KEEL_P2P_OP_STRUCT_SIZE;
    EXPECT_EQ(code_of(2, sizeof(Longer)), KEEL_STATUS_INVALID_ARGUMENT) << "an entry whose struct_size is not op_size";
    KEEL_EXPECT_OK(s.synchronize());
}

TEST_P(Conformance, AnAbortedCommunicatorFailsLaterEnqueuesAndIsStillDestroyed) {
    KEEL_RULE(4, "comm.abort");
    MemoryStore store;
    KEEL_COMM_OR_SKIP(comm, store, "cts/abort");
    KEEL_ASSERT_OK_AND_ASSIGN(Stream s, Stream::create(device()));
    KEEL_ASSERT_OK_AND_ASSIGN(Buffer b, Buffer::allocate(s, 64));
    const keel_device_addr a = b.view().address();
    KEEL_ASSERT_OK(take_c_error(api.comm_all_reduce(comm.comm, plugin_handle(s), a, a, 16, KEEL_DTYPE_F32, KEEL_REDUCE_SUM)));
    KEEL_ASSERT_OK(s.synchronize());
    KEEL_ASSERT_OK(take_c_error(api.comm_abort(comm.comm)));
    KEEL_ASSERT_OK(take_c_error(api.comm_abort(comm.comm)));  // idempotent
    Result<void> after = take_c_error(api.comm_all_reduce(comm.comm, plugin_handle(s), a, a, 16, KEEL_DTYPE_F32, KEEL_REDUCE_SUM));
    ASSERT_FALSE(after.ok()) << "an enqueue after comm_abort was accepted";
    EXPECT_EQ(after.error().code(), KEEL_STATUS_FAILED_PRECONDITION) << after.error().message();
    EXPECT_NE(after.error().message().find("cts/abort"), std::string::npos)
        << "the message does not name the communicator: " << after.error().message();
    // The stream itself is unharmed: the work before the abort completed.
    KEEL_EXPECT_OK(s.synchronize());
}

}  // namespace keel::conformance
