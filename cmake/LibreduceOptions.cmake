# SPDX-License-Identifier: BSD-3-Clause
# Options for every optional part. Each AUTO option is resolved by detection and says
# clearly why a part is left out; ON makes a missing dependency an error.
include(CheckLanguage)
find_package(PkgConfig QUIET)

set(LIBREDUCE_WITH_CUDA AUTO CACHE STRING "CUDA kernels (AUTO/ON/OFF)")
set(LIBREDUCE_WITH_UCX AUTO CACHE STRING "UCX transport (AUTO/ON/OFF)")
set(LIBREDUCE_WITH_HWLOC AUTO CACHE STRING "hwloc thread/memory binding (AUTO/ON/OFF)")
set(LIBREDUCE_WITH_TORCH AUTO CACHE STRING "PyTorch c10d backend, torch 2.x (AUTO/ON/OFF)")
set(LIBREDUCE_WITH_BASELINES AUTO CACHE STRING "Gloo / MPI baseline benchmarks (AUTO/ON/OFF)")
set(LIBREDUCE_WITH_NCCL_PLUGIN AUTO CACHE STRING "NCCL Net + CollNet plugin libnccl-net-libreduce.so (AUTO/ON/OFF)")
option(LIBREDUCE_BUILD_TESTS "Build the test suite" ON)
option(LIBREDUCE_BUILD_BENCH "Build the benchmarks" ON)
# pip install . (pyproject.toml) sets it: the install prefix is site-packages/libreduce, and what
# is installed finds its libraries relative to itself.
option(LIBREDUCE_WHEEL "Install laid out as the Python wheel (everything under site-packages/libreduce)" OFF)
if(LIBREDUCE_WHEEL)
  set(CMAKE_INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR}")
endif()
set(LIBREDUCE_SANITIZE "" CACHE STRING "Sanitizers to build with, e.g. address,undefined")
set(LIBREDUCE_CUDA_ARCHITECTURES "90" CACHE STRING "CUDA architectures (90 = sm_90 SASS + compute_90 PTX)")

# rd_resolve_option(<var> <found> <why-missing>): turns AUTO into ON/OFF, fails for ON.
function(rd_resolve_option var found why)
  if(${var} STREQUAL "OFF")
    set(${var}_ENABLED OFF PARENT_SCOPE)
    set(${var}_REASON "disabled (-D${var}=OFF)" PARENT_SCOPE)
  elseif(found)
    set(${var}_ENABLED ON PARENT_SCOPE)
    set(${var}_REASON "found" PARENT_SCOPE)
  elseif(${var} STREQUAL "ON")
    message(FATAL_ERROR "${var}=ON but ${why}")
  else()
    message(STATUS "libreduce: ${var} off: ${why}")
    set(${var}_ENABLED OFF PARENT_SCOPE)
    set(${var}_REASON "${why}" PARENT_SCOPE)
  endif()
endfunction()

# --- CUDA: the toolkit lives at /usr/local/cuda on this project's machines.
if(NOT LIBREDUCE_WITH_CUDA STREQUAL "OFF")
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  check_language(CUDA)
endif()
set(_cuda_found OFF)
if(CMAKE_CUDA_COMPILER AND NOT LIBREDUCE_WITH_CUDA STREQUAL "OFF")
  set(_cuda_found ON)
endif()
rd_resolve_option(LIBREDUCE_WITH_CUDA ${_cuda_found} "no CUDA compiler (nvcc) found")
if(LIBREDUCE_WITH_CUDA_ENABLED)
  set(CMAKE_CUDA_ARCHITECTURES ${LIBREDUCE_CUDA_ARCHITECTURES})
  set(CMAKE_CUDA_STANDARD 17)  # CMake 3.25 knows no C++20 flag for nvcc
  set(CMAKE_CUDA_STANDARD_REQUIRED ON)
  enable_language(CUDA)
  find_package(CUDAToolkit REQUIRED)
endif()

# --- UCX and hwloc through pkg-config (Debian's libucx-dev, libhwloc-dev).
set(_ucx_found OFF)
set(_hwloc_found OFF)
if(PkgConfig_FOUND)
  pkg_check_modules(UCX QUIET IMPORTED_TARGET ucx)
  pkg_check_modules(HWLOC QUIET IMPORTED_TARGET hwloc)
  set(_ucx_found ${UCX_FOUND})
  set(_hwloc_found ${HWLOC_FOUND})
endif()
rd_resolve_option(LIBREDUCE_WITH_UCX "${_ucx_found}" "UCX not found (apt-get install libucx-dev)")
rd_resolve_option(LIBREDUCE_WITH_HWLOC "${_hwloc_found}" "hwloc not found (apt-get install libhwloc-dev)")

# --- NCCL plugin: host code over the UCX transport; it declares NCCL's plugin ABI itself, so
# neither NCCL nor CUDA is needed to build it.
rd_resolve_option(LIBREDUCE_WITH_NCCL_PLUGIN "${LIBREDUCE_WITH_UCX_ENABLED}"
                  "it needs the UCX transport (LIBREDUCE_WITH_UCX)")

# --- The Python package and the PyTorch backend (interpreter, pybind11, torch).
include(LibreducePython)

# --- Baselines: Gloo and MPI for side-by-side benchmarks.
find_package(MPI QUIET COMPONENTS CXX)
find_path(GLOO_INCLUDE_DIR gloo/allreduce_ring.h)
set(_baselines_found OFF)
if(MPI_CXX_FOUND AND GLOO_INCLUDE_DIR)
  set(_baselines_found ON)
endif()
rd_resolve_option(LIBREDUCE_WITH_BASELINES ${_baselines_found}
                  "Gloo or MPI headers not found (apt-get install libgloo-dev libopenmpi-dev)")

# --- Sanitizers apply to every target of this build tree.
if(LIBREDUCE_SANITIZE)
  string(REPLACE "," ";" _sanitizers "${LIBREDUCE_SANITIZE}")
  foreach(_s IN LISTS _sanitizers)
    add_compile_options($<$<COMPILE_LANGUAGE:C,CXX>:-fsanitize=${_s}>)
    add_link_options(-fsanitize=${_s})
  endforeach()
  add_compile_options($<$<COMPILE_LANGUAGE:C,CXX>:-fno-omit-frame-pointer>
                      $<$<COMPILE_LANGUAGE:C,CXX>:-fno-sanitize-recover=all>)
endif()
