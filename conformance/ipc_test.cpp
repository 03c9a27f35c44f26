// Memory and events shared between processes (keel.h 1.6, optional): what
// one process can check. The exporter's and the importer's side run in the
// suite's process (a plugin may refuse an import in the exporting process:
// the check is then skipped, saying so); tests/ipc runs two processes.
#include "conformance.hpp"

#include <keel/ipc.hpp>

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

namespace keel::conformance {
namespace {

#define KEEL_SKIP_WITHOUT_IPC_MEMORY()                                                           \
    if (!device().has(DeviceCapability::ipc_memory))                                             \
    GTEST_SKIP() << device().name() << " does not share memory between processes (optional)"

TEST_P(Conformance, DevicesWithoutIpcMemoryAnswerUnimplemented) {
    KEEL_RULE(6, "ipc.memory-set");
    if (device().has(DeviceCapability::ipc_memory)) GTEST_SKIP() << device().name() << " shares memory";
    auto r = ipc::allocate_exportable(device(), 256);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), KEEL_STATUS_UNIMPLEMENTED) << r.error().message();
}

TEST_P(Conformance, ExportedMemoryImportedAgainHoldsTheExportersBytesInOrder) {
    KEEL_RULE(6, "ipc.memory-ordering");
    KEEL_SKIP_WITHOUT_IPC_MEMORY();
    // Without shared events the exporter orders its writes on the host
    // before it exports (the rule's other way).
    const bool events = device().has(DeviceCapability::ipc_events);
    constexpr std::uint64_t kBytes = 64 * 1024;
    KEEL_ASSERT_OK_AND_ASSIGN(RawBuffer mem, ipc::allocate_exportable(device(), kBytes));
    KEEL_ASSERT_OK_AND_ASSIGN(Stream writer, Stream::create(device()));
    KEEL_ASSERT_OK_AND_ASSIGN(Stream reader, Stream::create(device()));
    KEEL_ASSERT_OK(writer.memset(mem.view(), 0x6C));
    std::optional<Event> written;
    if (events) {
        KEEL_ASSERT_OK_AND_ASSIGN(Event e, ipc::create_event(device()));
        KEEL_ASSERT_OK(e.record(writer));
        written.emplace(std::move(e));
    } else {
        KEEL_ASSERT_OK(writer.synchronize());
    }
    KEEL_ASSERT_OK_AND_ASSIGN(ipc::Handle mh, ipc::export_memory(mem));
    EXPECT_EQ(mh.kind(), KEEL_IPC_HANDLE_MEMORY);
    EXPECT_EQ(mh.size(), kBytes);
    auto imported = ipc::import_memory(device(), mh);
    if (!imported.ok() && imported.error().code() == KEEL_STATUS_FAILED_PRECONDITION)
        GTEST_SKIP() << device().name() << " refuses imports in the exporting process (allowed): "
                     << imported.error().message();
    KEEL_ASSERT_OK(imported);
    if (events) {
        KEEL_ASSERT_OK_AND_ASSIGN(ipc::Handle eh, ipc::export_event(*written));
        EXPECT_EQ(eh.kind(), KEEL_IPC_HANDLE_EVENT);
        KEEL_ASSERT_OK_AND_ASSIGN(Event seen, ipc::import_event(device(), eh));
        KEEL_ASSERT_OK(reader.wait(seen));
        EXPECT_FALSE(seen.record(reader).ok()) << "an imported event was recorded";
    }
    KEEL_ASSERT_OK_AND_ASSIGN(Bytes got, read_bytes(reader, imported->view()));
    EXPECT_EQ(got, Bytes(kBytes, 0x6C));
    KEEL_EXPECT_OK(imported->close());
    KEEL_EXPECT_OK(writer.synchronize());
}

TEST_P(Conformance, IpcHandlesOfTheWrongKindOrWithoutTheirDescriptorAreRefused) {
    KEEL_RULE(6, "ipc.errors");
    KEEL_SKIP_WITHOUT_IPC_MEMORY();
    KEEL_ASSERT_OK_AND_ASSIGN(RawBuffer mem, ipc::allocate_exportable(device(), 4096));
    KEEL_ASSERT_OK_AND_ASSIGN(ipc::Handle mh, ipc::export_memory(mem));
    keel_ipc_handle forged = mh.c_handle();
    forged.fd = -1;
    for (std::uint32_t i = 0; i < forged.byte_count; ++i) forged.bytes[i] ^= 0x5A;
    auto r = ipc::import_memory(device(), ipc::Handle::adopt(forged));
    ASSERT_FALSE(r.ok()) << "a forged handle was imported";
    EXPECT_EQ(r.error().code(), KEEL_STATUS_INVALID_ARGUMENT) << r.error().message();
    KEEL_ASSERT_OK_AND_ASSIGN(RawBuffer plain, RawBuffer::allocate(device(), 4096));
    auto not_exportable = ipc::export_memory(plain);
    // Where every allocation is exportable (CUDA, Level Zero) this succeeds.
    if (!not_exportable.ok()) {
        EXPECT_EQ(not_exportable.error().code(), KEEL_STATUS_INVALID_ARGUMENT) << not_exportable.error().message();
    }
}

}  // namespace
}  // namespace keel::conformance
