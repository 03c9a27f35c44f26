# CUDA as a language of the including directory: nvcc, and the C++20 flag
# CMake < 3.26 does not know nvcc >= 12 accepts. Languages are enabled per
# directory, so every directory that compiles .cu files includes this.
enable_language(CUDA)
if(CMAKE_CUDA_COMPILER_VERSION VERSION_GREATER_EQUAL 12.0 AND NOT CMAKE_CUDA20_STANDARD_COMPILE_OPTION)
  set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
  set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
endif()
