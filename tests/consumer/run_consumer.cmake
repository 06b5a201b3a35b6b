# cmake -P script behind the consumer.* tests: configures, builds and runs one consumer project
# from tests/consumer/<MODE>/ in a fresh scratch directory, failing on the first step that fails.
#
#   MODE              find_package | add_subdirectory | fetchcontent | layer (LAYER: a target)
#   TENSAT_SOURCE_DIR tensat's source tree          TENSAT_VERSION  the version it declares
#   CONSUMER_DIR      the consumer project          WORK_DIR        scratch directory (wiped)
#   GENERATOR, GENERATOR_PLATFORM, GENERATOR_TOOLSET, MAKE_PROGRAM, CXX_COMPILER, TOOLCHAIN_FILE,
#   CXX_FLAGS, EXE_LINKER_FLAGS, BUILD_TYPE, PREFIX_PATH ('|'-separated): forwarded from the
#   outer build.
cmake_minimum_required(VERSION 3.21)

foreach(_var MODE TENSAT_SOURCE_DIR TENSAT_VERSION CONSUMER_DIR WORK_DIR GENERATOR CXX_COMPILER)
  if("${${_var}}" STREQUAL "")
    message(FATAL_ERROR "run_consumer.cmake: -D${_var}=... is required")
  endif()
endforeach()
string(REPLACE "|" ";" PREFIX_PATH "${PREFIX_PATH}")

# A list as one -D argument: its ';' must survive being passed through step()'s ARGN.
function(list_arg out)
  string(REPLACE ";" "\\;" _escaped "${ARGN}")
  set(${out} "${_escaped}" PARENT_SCOPE)
endfunction()

# Runs one step; any failure (non-zero exit, crash, missing program) ends the test.
function(step what)
  message(STATUS "[consumer.${MODE}] ${what}")
  execute_process(COMMAND ${ARGN} COMMAND_ECHO STDOUT RESULT_VARIABLE _rc)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "[consumer.${MODE}] FAILED: ${what} (exit: ${_rc})")
  endif()
endfunction()

# The outer build's toolchain, so the consumer is built the way the tests are.
set(_toolchain -G "${GENERATOR}" "-DCMAKE_CXX_COMPILER=${CXX_COMPILER}")
if(GENERATOR_PLATFORM)
  list(APPEND _toolchain -A "${GENERATOR_PLATFORM}")
endif()
if(GENERATOR_TOOLSET)
  list(APPEND _toolchain -T "${GENERATOR_TOOLSET}")
endif()
if(MAKE_PROGRAM)
  list(APPEND _toolchain "-DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM}")
endif()
if(TOOLCHAIN_FILE)
  list(APPEND _toolchain "-DCMAKE_TOOLCHAIN_FILE=${TOOLCHAIN_FILE}")
endif()
list(APPEND _toolchain "-DCMAKE_CXX_FLAGS=${CXX_FLAGS}" "-DCMAKE_EXE_LINKER_FLAGS=${EXE_LINKER_FLAGS}")
set(_config)
if(BUILD_TYPE)
  list(APPEND _toolchain "-DCMAKE_BUILD_TYPE=${BUILD_TYPE}")
  set(_config --config "${BUILD_TYPE}")
endif()

file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")
set(_consumer_args)

if(MODE STREQUAL "find_package")
  set(_prefix "${WORK_DIR}/prefix")
  list_arg(_prefix_path_arg ${PREFIX_PATH})
  # The CUDA library is left out: this consumer does not use it, and where nvcc is installed it
  # would be most of this test's time.
  step("configure tensat (tests, examples, benchmarks, CUDA off)"
    ${CMAKE_COMMAND} -S "${TENSAT_SOURCE_DIR}" -B "${WORK_DIR}/tensat-build" ${_toolchain}
      "-DCMAKE_PREFIX_PATH=${_prefix_path_arg}"
      -DTENSAT_BUILD_TESTS=OFF -DTENSAT_BUILD_EXAMPLES=OFF -DTENSAT_BUILD_BENCHMARKS=OFF
      -DTENSAT_WITH_CUDA=OFF)
  step("build tensat" ${CMAKE_COMMAND} --build "${WORK_DIR}/tensat-build" ${_config})
  step("install tensat to ${_prefix}"
    ${CMAKE_COMMAND} --install "${WORK_DIR}/tensat-build" --prefix "${_prefix}" ${_config})
  if(NOT EXISTS "${_prefix}/include/tensat/tensat.h")
    message(FATAL_ERROR "[consumer.${MODE}] FAILED: ${_prefix}/include/tensat/tensat.h was not installed")
  endif()
  list(PREPEND PREFIX_PATH "${_prefix}")
  list(APPEND _consumer_args "-DTENSAT_EXPECTED_VERSION=${TENSAT_VERSION}"
       "-DTENSAT_EXPECT_ONNX=${EXPECT_ONNX}"
       -DCMAKE_FIND_PACKAGE_NO_PACKAGE_REGISTRY=ON)
elseif(MODE STREQUAL "add_subdirectory" OR MODE STREQUAL "fetchcontent")
  list(APPEND _consumer_args "-DTENSAT_SOURCE_DIR=${TENSAT_SOURCE_DIR}")
elseif(MODE STREQUAL "layer")
  if("${LAYER}" STREQUAL "")
    message(FATAL_ERROR "run_consumer.cmake: MODE layer needs -DLAYER=...")
  endif()
  list(APPEND _consumer_args "-DTENSAT_SOURCE_DIR=${TENSAT_SOURCE_DIR}" "-DTENSAT_LAYER=${LAYER}")
  if(LAYER STREQUAL "core" OR LAYER STREQUAL "tensor")  # these must need neither
    list(APPEND _consumer_args -DCMAKE_DISABLE_FIND_PACKAGE_Eigen3=ON
         -DCMAKE_DISABLE_FIND_PACKAGE_nlohmann_json=ON)
  endif()
else()
  message(FATAL_ERROR "run_consumer.cmake: unknown MODE '${MODE}'")
endif()

list_arg(_prefix_path_arg ${PREFIX_PATH})
step("configure the consumer"
  ${CMAKE_COMMAND} -S "${CONSUMER_DIR}" -B "${WORK_DIR}/build" ${_toolchain}
    "-DCMAKE_PREFIX_PATH=${_prefix_path_arg}" ${_consumer_args})

if(MODE STREQUAL "find_package")
  # The package found must be the one just installed, not one elsewhere on the system.
  file(STRINGS "${WORK_DIR}/build/CMakeCache.txt" _found REGEX "^tensat_DIR:")
  string(REGEX REPLACE "^tensat_DIR:[A-Z]+=" "" _found "${_found}")
  string(FIND "${_found}" "${_prefix}/" _at)
  if(NOT _at EQUAL 0)
    message(FATAL_ERROR "[consumer.${MODE}] FAILED: found tensat at '${_found}', not under ${_prefix}")
  endif()
endif()

step("build the consumer" ${CMAKE_COMMAND} --build "${WORK_DIR}/build" ${_config})

# Single-config generators put it in build/, multi-config ones in build/<config>/.
file(GLOB _apps LIST_DIRECTORIES false
  "${WORK_DIR}/build/app" "${WORK_DIR}/build/app.exe"
  "${WORK_DIR}/build/*/app" "${WORK_DIR}/build/*/app.exe")
list(LENGTH _apps _n)
if(NOT _n EQUAL 1)
  message(FATAL_ERROR "[consumer.${MODE}] FAILED: expected one built 'app', found: '${_apps}'")
endif()
step("run the consumer" ${_apps})
message(STATUS "[consumer.${MODE}] passed")
