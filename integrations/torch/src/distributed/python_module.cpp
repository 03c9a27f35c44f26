// keel_torch._c10d: the Python face of the keel process group, the creator
// function torch.distributed.Backend.register_backend("keel", ...) calls.
// Types cross into torch's own bindings (c10d.Store, c10d.ProcessGroup)
// through pybind11's shared registry.
// Python's headers first, as Python asks.
#include <torch/csrc/utils/pybind.h>

#include <pybind11/chrono.h>

#include "process_group.hpp"

namespace {

c10::intrusive_ptr<c10d::ProcessGroup> create_process_group(const c10::intrusive_ptr<c10d::Store>& store, int rank,
                                                            int size, std::chrono::duration<float> timeout) {
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(timeout);
    return c10::make_intrusive<keel_torch::ProcessGroupKeel>(store, rank, size, ms);
}

}  // namespace

PYBIND11_MODULE(_c10d, m) {
    m.doc() = "torch.distributed's keel backend (see keel_torch.distributed)";
    m.def("create_process_group", &create_process_group, py::arg("store"), py::arg("rank"), py::arg("size"),
          py::arg("timeout"), py::call_guard<py::gil_scoped_release>(),
          "A keel ProcessGroup of `size` ranks meeting through the c10d `store`.");
}
