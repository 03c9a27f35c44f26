#include "cuda_error.hpp"

namespace keel::cuda {

Status status_from_cuda(cudaError_t error) noexcept {
    switch (error) {
        case cudaSuccess:
            return KEEL_STATUS_OK;
        case cudaErrorMemoryAllocation:
            return KEEL_STATUS_OUT_OF_MEMORY;
        case cudaErrorInvalidValue:
        case cudaErrorInvalidDevicePointer:
        case cudaErrorInvalidResourceHandle:
        case cudaErrorInvalidConfiguration:
        case cudaErrorInvalidDevice:
        case cudaErrorInvalidMemcpyDirection:
        case cudaErrorInvalidPitchValue:
        case cudaErrorInvalidSymbol:
        case cudaErrorInvalidDeviceFunction:
            return KEEL_STATUS_INVALID_ARGUMENT;
        case cudaErrorNotSupported:
            return KEEL_STATUS_UNIMPLEMENTED;
        case cudaErrorNotReady:
            // Only reaches here when a caller treats "not ready" as a failure,
            // e.g. the elapsed time of an event still pending.
            return KEEL_STATUS_FAILED_PRECONDITION;
        case cudaErrorNoDevice:
        case cudaErrorInsufficientDriver:
        case cudaErrorInitializationError:
        case cudaErrorDevicesUnavailable:
        case cudaErrorStubLibrary:
        case cudaErrorCallRequiresNewerDriver:
        case cudaErrorSystemNotReady:
        case cudaErrorSystemDriverMismatch:
        case cudaErrorCompatNotSupportedOnDevice:
        case cudaErrorCudartUnloading:
        case cudaErrorNoKernelImageForDevice:
        case cudaErrorUnsupportedPtxVersion:
        case cudaErrorJitCompilerNotFound:
        case cudaErrorDeviceNotLicensed:
            return KEEL_STATUS_UNAVAILABLE;
        default:
            // cudaErrorIllegalAddress, cudaErrorLaunchFailure, cudaErrorAssert,
            // ECC errors, ...: the device failed while running enqueued work.
            return KEEL_STATUS_DEVICE_ERROR;
    }
}

std::string describe_cuda(cudaError_t error) {
    // Both return static strings, also for unknown codes.
    return std::string(cudaGetErrorName(error)) + ": " + cudaGetErrorString(error);
}

Error cuda_error(cudaError_t error, std::string_view context) {
    std::string message;
    if (!context.empty()) {
        message.append(context);
        message += ": ";
    }
    message += describe_cuda(error);
    return Error(status_from_cuda(error), std::move(message));
}

}  // namespace keel::cuda
