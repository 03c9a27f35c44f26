// CUDA's error codes turned into keel's: a keel status plus CUDA's own name
// and message ("cudaErrorIllegalAddress: an illegal memory access was
// encountered"), so a user can search for exactly what CUDA said.
#pragma once

#include <keel/result.hpp>

#include <cuda_runtime_api.h>

#include <string>
#include <string_view>

namespace keel::cuda {

// The keel status closest to a CUDA error (cudaErrorMemoryAllocation ->
// OUT_OF_MEMORY, cudaErrorIllegalAddress -> DEVICE_ERROR, ...).
[[nodiscard]] Status status_from_cuda(cudaError_t error) noexcept;

// "cudaErrorX: message", CUDA's own words.
[[nodiscard]] std::string describe_cuda(cudaError_t error);

// An Error for a failed CUDA call; `context`, when given, is put in front:
// "<context>: cudaErrorX: message".
[[nodiscard]] Error cuda_error(cudaError_t error, std::string_view context = {});

// ok() for cudaSuccess, cuda_error() otherwise.
[[nodiscard]] inline Result<void> check_cuda(cudaError_t error, std::string_view context = {}) {
    if (error == cudaSuccess) return ok();
    return cuda_error(error, context);
}

}  // namespace keel::cuda
