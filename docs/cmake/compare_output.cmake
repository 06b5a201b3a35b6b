# Runs PROGRAM and compares its standard output with the file EXPECTED, ignoring trailing
# whitespace on each line and at the end. Used by the documentation tests (docs/CMakeLists.txt):
#   cmake -DPROGRAM=<exe> [-DPROGRAM_ARGS=<list>] -DEXPECTED=<file> [-DEXPECT_MISMATCH=ON]
#         -P compare_output.cmake
# With EXPECT_MISMATCH (the self-test of this script), the program must still run successfully,
# and it is the *equality* of the outputs that fails.
if(NOT DEFINED PROGRAM OR NOT DEFINED EXPECTED)
  message(FATAL_ERROR "usage: cmake -DPROGRAM=<exe> -DEXPECTED=<file> -P compare_output.cmake")
endif()

execute_process(COMMAND "${PROGRAM}" ${PROGRAM_ARGS}
  OUTPUT_VARIABLE _actual
  ERROR_VARIABLE _stderr
  RESULT_VARIABLE _rc)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "${PROGRAM} exited with '${_rc}'\nstderr:\n${_stderr}\nstdout:\n${_actual}")
endif()
file(READ "${EXPECTED}" _expected)

# Normalize: CRLF to LF, no trailing blanks on any line, no trailing newlines.
foreach(_var _actual _expected)
  string(REPLACE "\r\n" "\n" ${_var} "${${_var}}")
  string(REGEX REPLACE "[ \t]+\n" "\n" ${_var} "${${_var}}")
  string(REGEX REPLACE "[ \t\n]+$" "" ${_var} "${${_var}}")
endforeach()

if(EXPECT_MISMATCH)
  if(_actual STREQUAL _expected)
    message(FATAL_ERROR "the outputs are equal, but a mismatch was expected")
  endif()
  message(STATUS "mismatch detected, as expected")
elseif(NOT _actual STREQUAL _expected)
  message(FATAL_ERROR "output differs from ${EXPECTED}\n"
    "---- expected ----\n${_expected}\n"
    "---- actual ------\n${_actual}\n"
    "------------------")
endif()
