# SPDX-License-Identifier: BSD-3-Clause
# The Python package (pybind11 and the headers of one interpreter) and the PyTorch backend
# (torch 2.x in that interpreter's environment).
#
# LIBREDUCE_PYTHON is the interpreter: the one scikit-build-core builds for (pip install .),
# else the active virtual environment's, else Debian's /usr/bin/python3 (no torch there).
# scripts/test.sh passes the project's environment (scripts/python_env.sh).
if(DEFINED Python_EXECUTABLE AND NOT DEFINED CACHE{LIBREDUCE_PYTHON})
  set(_python_default ${Python_EXECUTABLE})
elseif(DEFINED ENV{VIRTUAL_ENV} AND EXISTS "$ENV{VIRTUAL_ENV}/bin/python")
  set(_python_default "$ENV{VIRTUAL_ENV}/bin/python")
else()
  set(_python_default /usr/bin/python3)
endif()
set(LIBREDUCE_WITH_PYTHON AUTO CACHE STRING "Python package libreduce (AUTO/ON/OFF)")
set(LIBREDUCE_PYTHON ${_python_default} CACHE FILEPATH
    "Python interpreter the package and the torch backend are built for")

# rd_python_query(<var> <code>): what the interpreter prints for <code> ("" if it fails). Under
# pip's build isolation PYTHONPATH points at the isolated build environment and hides the
# packages of the environment being installed into: a second try without it finds them (torch
# must be the one the package will load with, never a copy fetched for the build).
function(rd_python_query var code)
  execute_process(COMMAND ${LIBREDUCE_PYTHON} -c "${code}"
                  OUTPUT_VARIABLE _out RESULT_VARIABLE _rc
                  OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(NOT _rc EQUAL 0 AND DEFINED ENV{PYTHONPATH})
    execute_process(COMMAND ${CMAKE_COMMAND} -E env --unset=PYTHONPATH --unset=PYTHONNOUSERSITE
                            ${LIBREDUCE_PYTHON} -c "${code}"
                    OUTPUT_VARIABLE _out RESULT_VARIABLE _rc
                    OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  endif()
  if(NOT _rc EQUAL 0)
    set(_out "")
  endif()
  set(${var} "${_out}" PARENT_SCOPE)
endfunction()

set(_python_found OFF)
if(NOT LIBREDUCE_WITH_PYTHON STREQUAL "OFF" AND EXISTS ${LIBREDUCE_PYTHON})
  set(Python_EXECUTABLE ${LIBREDUCE_PYTHON})
  find_package(Python QUIET COMPONENTS Interpreter Development.Module)
  # pybind11 of the interpreter's environment (PyPI's), else Debian's (pybind11-dev).
  rd_python_query(_pybind11_dir "import pybind11; print(pybind11.get_cmake_dir())")
  find_package(pybind11 CONFIG QUIET HINTS ${_pybind11_dir})
  if(Python_FOUND AND pybind11_FOUND)
    set(_python_found ON)
  endif()
endif()
rd_resolve_option(LIBREDUCE_WITH_PYTHON ${_python_found}
                  "pybind11 or the headers of ${LIBREDUCE_PYTHON} not found (apt-get install pybind11-dev python3-dev)")

# --- torch 2.x: its headers and libraries ship in the wheel (torch/include, torch/lib).
set(_torch_found OFF)
set(_torch_why "torch is not installed for ${LIBREDUCE_PYTHON} (scripts/setup.sh makes an environment with it; pass -DLIBREDUCE_PYTHON=<venv>/bin/python)")
if(LIBREDUCE_WITH_PYTHON_ENABLED AND NOT LIBREDUCE_WITH_TORCH STREQUAL "OFF")
  rd_python_query(_torch_facts [=[
import os, torch
from torch.utils.cpp_extension import include_paths, library_paths
print(";".join([torch.__version__, str(int(torch._C._GLIBCXX_USE_CXX11_ABI)),
                os.path.dirname(os.path.dirname(torch.__file__)),
                "|".join(include_paths()), library_paths()[0]]))
]=])
  if(_torch_facts)
    list(GET _torch_facts 0 LIBREDUCE_TORCH_VERSION)
    list(GET _torch_facts 1 LIBREDUCE_TORCH_CXX11_ABI)
    list(GET _torch_facts 2 LIBREDUCE_TORCH_SITE_DIR)
    list(GET _torch_facts 3 _torch_includes)
    list(GET _torch_facts 4 LIBREDUCE_TORCH_LIBRARY_DIR)
    string(REPLACE "|" ";" LIBREDUCE_TORCH_INCLUDE_DIRS "${_torch_includes}")
    if(LIBREDUCE_TORCH_VERSION VERSION_LESS 2.0)
      set(_torch_why "torch ${LIBREDUCE_TORCH_VERSION} is too old: the backend needs torch 2.x")
    else()
      set(_torch_found ON)
      message(STATUS "libreduce: torch ${LIBREDUCE_TORCH_VERSION} in ${LIBREDUCE_TORCH_SITE_DIR}")
    endif()
  endif()
endif()
rd_resolve_option(LIBREDUCE_WITH_TORCH ${_torch_found} "${_torch_why}")
