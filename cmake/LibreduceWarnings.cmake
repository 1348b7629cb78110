# SPDX-License-Identifier: BSD-3-Clause
# rd_target_warnings(<target>): the warning set every C++ target of the project builds with.
function(rd_target_warnings target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wno-sign-conversion
      -Wnon-virtual-dtor -Wold-style-cast -Wcast-align -Wnull-dereference -Wimplicit-fallthrough>)
  if(LIBREDUCE_WERROR)
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Werror>)
  endif()
endfunction()
option(LIBREDUCE_WERROR "Treat warnings as errors" OFF)
