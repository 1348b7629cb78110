# SPDX-License-Identifier: BSD-3-Clause
# One block at the end of configuration saying what this build contains and why parts are off.
message(STATUS "")
message(STATUS "libreduce ${PROJECT_VERSION} configuration")
foreach(_part CUDA UCX HWLOC NCCL_PLUGIN PYTHON TORCH BASELINES)
  string(TOLOWER ${_part} _lower)
  if(LIBREDUCE_WITH_${_part}_ENABLED)
    message(STATUS "  ${_lower}: ON")
  else()
    message(STATUS "  ${_lower}: OFF (${LIBREDUCE_WITH_${_part}_REASON})")
  endif()
endforeach()
message(STATUS "  tests: ${LIBREDUCE_BUILD_TESTS}  benchmarks: ${LIBREDUCE_BUILD_BENCH}  sanitizers: ${LIBREDUCE_SANITIZE}")
message(STATUS "")
