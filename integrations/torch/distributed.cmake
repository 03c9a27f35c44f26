# torch.distributed's backend "keel": the Python module keel_torch._c10d
# (pybind11, sharing torch's own bindings of c10d's Store and ProcessGroup)
# over keel::comm, and keel_torch/distributed.py, which registers it. A
# module apart from libkeel_torch.so, so that keel_torch alone never loads
# keel::comm and Gloo. On where keel::comm, pybind11, the interpreter's
# headers and libtorch_python are found.
set(Python3_EXECUTABLE ${KEEL_TORCH_PYTHON})
find_package(Python3 COMPONENTS Interpreter Development.Module QUIET)
find_package(pybind11 CONFIG QUIET)
find_library(KEEL_TORCH_PYTHON_LIBRARY torch_python HINTS ${TORCH_INSTALL_PREFIX}/lib)
if(TARGET keel_comm AND Python3_Development.Module_FOUND AND pybind11_FOUND AND KEEL_TORCH_PYTHON_LIBRARY)
  set(_keel_torch_distributed_default ON)
else()
  set(_keel_torch_distributed_default OFF)
endif()
option(KEEL_ENABLE_TORCH_DISTRIBUTED
       "Build torch.distributed's keel backend (default: on if keel::comm, pybind11 and Python's headers are found)"
       ${_keel_torch_distributed_default})
if(NOT KEEL_ENABLE_TORCH_DISTRIBUTED)
  message(STATUS "keel: torch.distributed backend off (needs keel::comm, pybind11-dev, python3-dev and libtorch_python)")
  return()
endif()

# What the module needs of libkeel_torch.so: its devices and streams.
target_sources(keel_torch PRIVATE src/distributed/device_access.cpp)

Python3_add_library(keel_torch_c10d MODULE WITH_SOABI
  src/distributed/autograd_fallthrough.cpp
  src/distributed/process_group.cpp
  src/distributed/python_module.cpp
  src/distributed/reduce_types.cpp
  src/distributed/store_bridge.cpp
  src/distributed/work.cpp)
target_link_libraries(keel_torch_c10d PRIVATE keel_torch keel::comm keel::runtime pybind11::headers
                      ${TORCH_LIBRARIES} ${KEEL_TORCH_PYTHON_LIBRARY})
target_compile_options(keel_torch_c10d PRIVATE ${TORCH_CXX_FLAGS} $<$<CONFIG:Debug,RelWithDebInfo>:-g1>)
set_target_properties(keel_torch_c10d PROPERTIES
  OUTPUT_NAME _c10d
  LIBRARY_OUTPUT_DIRECTORY ${_keel_torch_build_dir}
  CXX_VISIBILITY_PRESET hidden
  VISIBILITY_INLINES_HIDDEN ON
  INSTALL_RPATH "$ORIGIN;$ORIGIN/${_keel_torch_to_libdir}")
configure_file(python/keel_torch/distributed.py ${_keel_torch_build_dir}/distributed.py COPYONLY)
install(TARGETS keel_torch_c10d LIBRARY DESTINATION ${KEEL_INSTALL_PYTHONDIR}/keel_torch)
install(FILES python/keel_torch/distributed.py DESTINATION ${KEEL_INSTALL_PYTHONDIR}/keel_torch)
