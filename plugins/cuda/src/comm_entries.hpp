// The communication entries of keel.h 1.4 on NCCL (comm_entries.cpp).
#pragma once

#include <keel/keel.h>

#include <cstdint>

namespace keel::cuda::api {

keel_error* comm_create(keel_device device, const keel_comm_config* config, keel_comm* out_comm) noexcept;
keel_error* comm_destroy(keel_comm comm) noexcept;
keel_error* comm_abort(keel_comm comm) noexcept;
keel_error* comm_all_reduce(keel_comm comm, keel_stream stream, keel_device_addr in, keel_device_addr out,
                            uint64_t count, keel_dtype dtype, keel_reduce_op op) noexcept;
keel_error* comm_broadcast(keel_comm comm, keel_stream stream, keel_device_addr in, keel_device_addr out,
                           uint64_t bytes, int32_t root) noexcept;
keel_error* comm_all_gather(keel_comm comm, keel_stream stream, keel_device_addr in, keel_device_addr out,
                            uint64_t bytes_per_rank) noexcept;
keel_error* comm_reduce_scatter(keel_comm comm, keel_stream stream, keel_device_addr in, keel_device_addr out,
                                uint64_t count_per_rank, keel_dtype dtype, keel_reduce_op op) noexcept;
keel_error* comm_send_recv(keel_comm comm, keel_stream stream, const keel_p2p_op* ops, uint32_t count) noexcept;
keel_error* comm_send_recv_sized(keel_comm comm, keel_stream stream, const keel_p2p_op* ops, uint32_t count,
                                 size_t op_size) noexcept;

}  // namespace keel::cuda::api
