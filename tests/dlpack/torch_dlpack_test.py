"""keel <-> PyTorch through torch.utils.dlpack, on cuda:0.

Skips (exit 77) without PyTorch, without a CUDA device, or when keel has no
cuda:0. Usage: torch_dlpack_test.py <libkeel_torch_bridge.so>
"""
import ctypes
import sys

SKIP = 77


def main(bridge_path):
    try:
        import torch
        import torch.utils.dlpack
    except ImportError:
        print("skipped: PyTorch is not installed")
        return SKIP
    if not torch.cuda.is_available():
        print("skipped: PyTorch sees no CUDA device")
        return SKIP

    bridge = ctypes.CDLL(bridge_path)
    bridge.keel_torch_export_filled.restype = ctypes.c_void_p
    bridge.keel_torch_export_filled.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_float]
    bridge.keel_torch_import_sum.restype = ctypes.c_double
    bridge.keel_torch_import_sum.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
    capsule_new = ctypes.pythonapi.PyCapsule_New
    capsule_new.restype = ctypes.py_object
    capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
    capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
    capsule_pointer.restype = ctypes.c_void_p
    capsule_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
    capsule_rename = ctypes.pythonapi.PyCapsule_SetName
    capsule_rename.argtypes = [ctypes.py_object, ctypes.c_char_p]

    # keel -> torch: no copy, torch's tensor is keel's buffer.
    managed = bridge.keel_torch_export_filled(b"cuda:0", 1000, 2.5)
    if not managed:
        print("skipped: keel has no cuda:0")
        return SKIP
    tensor = torch.utils.dlpack.from_dlpack(capsule_new(managed, b"dltensor", None))
    assert tensor.device.type == "cuda" and tensor.shape == (1000,), tensor
    assert torch.all(tensor == 2.5).item(), tensor
    tensor.mul_(2)  # torch writes keel's memory in place
    del tensor  # torch calls keel's deleter: the buffer goes back to keel

    # torch -> keel: keel reads torch's memory in place and releases it once.
    source = torch.arange(100, dtype=torch.float32, device="cuda:0")
    torch.cuda.synchronize()
    capsule = torch.utils.dlpack.to_dlpack(source)
    pointer = capsule_pointer(capsule, b"dltensor")
    capsule_rename(capsule, b"used_dltensor")  # keel owns it now (the DLPack protocol)
    total = bridge.keel_torch_import_sum(pointer, b"cuda:0")
    assert total == sum(range(100)), total
    print("keel <-> torch DLPack exchange verified")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
