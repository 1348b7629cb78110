# SPDX-License-Identifier: BSD-3-Clause
# Fails when docs/settings.md differs from `reduce-info --markdown` (regenerate it with
# `build/src/tools/reduce-info --markdown > docs/settings.md`).
execute_process(COMMAND ${INFO} --markdown OUTPUT_VARIABLE generated RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "reduce-info --markdown failed (${rc})")
endif()
file(READ ${DOC} current)
string(FIND "${current}" "${generated}" at)
if(at EQUAL -1)
  message(FATAL_ERROR "docs/settings.md is out of date: run build/src/tools/reduce-info --markdown and paste its table")
endif()
