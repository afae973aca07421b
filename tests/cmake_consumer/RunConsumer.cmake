# RunConsumer.cmake: configure, build and run one tiny consumer project (cmake -P script, run by
# ctest). Offline: nothing is fetched. List-valued arguments use '|' as the separator.
#
#   SOURCE_DIR, BINARY_DIR       the consumer project and its (wiped) build dir
#   CMAKE_COMMAND, CTEST_COMMAND the tools of the parent build
#   GENERATOR[_PLATFORM|_TOOLSET], CXX_COMPILER, BUILD_TYPE, PREFIX_PATH   forwarded settings
#   CONSUMER_ARGS                extra -D arguments for the consumer's configure step
#   INSTALL_FROM, INSTALL_PREFIX optional: `cmake --install INSTALL_FROM --prefix INSTALL_PREFIX`
#                                first; INSTALL_PREFIX is put first on CMAKE_PREFIX_PATH
#   EXPECT_CONFIGURE_OUTPUT      optional: text the configure output must contain ('|' separates
#                                several texts, each required)
#   EXPECT_CONFIGURE_FAILURE     optional: configure must FAIL and its output contain this text;
#                                then nothing is built
#   CONFIGURE_ONLY               optional, ON: stop after a successful configure and its checks
#
# Without CMake (a consumer that is a plain compiler command; SOURCE_DIR's *.cpp are compiled and
# linked into BINARY_DIR/consumer, which is run and must exit 0):
#   DIRECT_COMPILE               ON selects this mode; CXX_COMPILER is the compiler
#   COMPILE_FLAGS                '|'-separated compiler arguments
#   PKG_CONFIG, PKG_CONFIG_MODULE  optional: the command line also gets
#                                $(PKG_CONFIG --cflags --libs PKG_CONFIG_MODULE), run by sh,
#                                with PKG_CONFIG_PATH=<INSTALL_PREFIX>/PKG_CONFIG_SUBDIR
#   EXPECT_PKG_CONFIG_VERSION    optional: what `PKG_CONFIG --modversion` must print
#   FORBIDDEN_HEADERS            optional, '|'-separated: the compile runs with -H and fails the
#                                test if a header path ending in one of these is included

cmake_minimum_required(VERSION 3.14)

set(required_vars SOURCE_DIR BINARY_DIR CMAKE_COMMAND CXX_COMPILER)
if(NOT DIRECT_COMPILE)
  list(APPEND required_vars CTEST_COMMAND GENERATOR BUILD_TYPE)
endif()
foreach(var IN LISTS required_vars)
  if(NOT DEFINED ${var} OR "${${var}}" STREQUAL "")
    message(FATAL_ERROR "RunConsumer.cmake: ${var} is not set")
  endif()
endforeach()

function(run_step name)
  execute_process(COMMAND ${ARGN}
    RESULT_VARIABLE rc
    OUTPUT_VARIABLE out
    ERROR_VARIABLE out)
  set(step_rc "${rc}" PARENT_SCOPE)
  set(step_out "${out}" PARENT_SCOPE)
  message("---- ${name} (exit ${rc}) ----\n${out}")
endfunction()

file(REMOVE_RECURSE "${BINARY_DIR}")
file(MAKE_DIRECTORY "${BINARY_DIR}")

string(REPLACE "|" ";" prefix_path "${PREFIX_PATH}")
if(DEFINED INSTALL_FROM AND NOT INSTALL_FROM STREQUAL "")
  file(REMOVE_RECURSE "${INSTALL_PREFIX}")
  run_step("install ${INSTALL_FROM} -> ${INSTALL_PREFIX}"
    "${CMAKE_COMMAND}" --install "${INSTALL_FROM}" --prefix "${INSTALL_PREFIX}" --config "${BUILD_TYPE}")
  if(NOT step_rc EQUAL 0)
    message(FATAL_ERROR "cmake --install failed")
  endif()
  list(INSERT prefix_path 0 "${INSTALL_PREFIX}")
endif()
# ---- Direct mode: the compiler alone, optionally fed by pkg-config ----------------------------
if(DIRECT_COMPILE)
  file(GLOB sources "${SOURCE_DIR}/*.cpp")
  list(SORT sources)
  if(NOT sources)
    message(FATAL_ERROR "no *.cpp in ${SOURCE_DIR}")
  endif()
  string(REPLACE "|" ";" compile_flags "${COMPILE_FLAGS}")
  set(exe "${BINARY_DIR}/consumer")
  if(FORBIDDEN_HEADERS)
    list(APPEND compile_flags -H)
  endif()
  if(PKG_CONFIG_MODULE)
    # As a user types it: <compiler> <flags> <sources> -o <exe> $(pkg-config --cflags --libs m)
    set(env "PKG_CONFIG_PATH=${INSTALL_PREFIX}/${PKG_CONFIG_SUBDIR}")
    run_step("pkg-config --cflags --libs ${PKG_CONFIG_MODULE}"
      "${CMAKE_COMMAND}" -E env "${env}" "${PKG_CONFIG}" --cflags --libs "${PKG_CONFIG_MODULE}")
    if(NOT step_rc EQUAL 0)
      message(FATAL_ERROR "pkg-config does not know ${PKG_CONFIG_MODULE}")
    endif()
    if(EXPECT_PKG_CONFIG_VERSION)
      run_step("pkg-config --modversion"
        "${CMAKE_COMMAND}" -E env "${env}" "${PKG_CONFIG}" --modversion "${PKG_CONFIG_MODULE}")
      string(STRIP "${step_out}" version)
      if(NOT version STREQUAL EXPECT_PKG_CONFIG_VERSION)
        message(FATAL_ERROR "pkg-config --modversion: '${version}', expected '${EXPECT_PKG_CONFIG_VERSION}'")
      endif()
    endif()
    set(line "'${CXX_COMPILER}'")
    foreach(arg IN LISTS compile_flags sources)
      string(APPEND line " '${arg}'")
    endforeach()
    string(APPEND line " -o '${exe}' $('${PKG_CONFIG}' --cflags --libs '${PKG_CONFIG_MODULE}')")
    run_step("compile: ${line}" "${CMAKE_COMMAND}" -E env "${env}" sh -c "${line}")
  else()
    run_step("compile" "${CXX_COMPILER}" ${compile_flags} ${sources} -o "${exe}")
  endif()
  if(NOT step_rc EQUAL 0)
    message(FATAL_ERROR "compile failed")
  endif()
  string(REPLACE "|" ";" forbidden "${FORBIDDEN_HEADERS}")
  foreach(header IN LISTS forbidden)
    # -H prints one included file per line, after dots for the depth.
    string(REGEX MATCH "\\.+ [^\n]*/${header}\n" hit "${step_out}")
    if(hit)
      message(FATAL_ERROR "a non-portable header was included: ${hit}")
    endif()
  endforeach()
  run_step("run" "${exe}")
  if(NOT step_rc EQUAL 0)
    message(FATAL_ERROR "the consumer program failed")
  endif()
  message("consumer OK")
  return()
endif()

# CMAKE_PREFIX_PATH goes through an initial-cache script: a ';' list does not survive being
# passed as one command-line argument through execute_process.
set(init_cache "${BINARY_DIR}/consumer-init-cache.cmake")
file(WRITE "${init_cache}" "set(CMAKE_PREFIX_PATH [==[${prefix_path}]==] CACHE STRING \"\")\n")

string(REPLACE "|" ";" consumer_args "${CONSUMER_ARGS}")
set(configure_cmd "${CMAKE_COMMAND}" -S "${SOURCE_DIR}" -B "${BINARY_DIR}" -G "${GENERATOR}")
if(GENERATOR_PLATFORM)
  list(APPEND configure_cmd -A "${GENERATOR_PLATFORM}")
endif()
if(GENERATOR_TOOLSET)
  list(APPEND configure_cmd -T "${GENERATOR_TOOLSET}")
endif()
list(APPEND configure_cmd
  "-DCMAKE_CXX_COMPILER=${CXX_COMPILER}"
  "-DCMAKE_BUILD_TYPE=${BUILD_TYPE}"
  -C "${init_cache}"
  "-DCMAKE_FIND_PACKAGE_NO_PACKAGE_REGISTRY=ON"
  ${consumer_args})

run_step("configure" ${configure_cmd})

if(DEFINED EXPECT_CONFIGURE_FAILURE AND NOT EXPECT_CONFIGURE_FAILURE STREQUAL "")
  if(step_rc EQUAL 0)
    message(FATAL_ERROR "configure succeeded but was expected to fail")
  endif()
  string(FIND "${step_out}" "${EXPECT_CONFIGURE_FAILURE}" pos)
  if(pos EQUAL -1)
    message(FATAL_ERROR "configure failed, but its output lacks: ${EXPECT_CONFIGURE_FAILURE}")
  endif()
  message("configure failed as expected")
  return()
endif()

if(NOT step_rc EQUAL 0)
  message(FATAL_ERROR "configure failed")
endif()
if(DEFINED EXPECT_CONFIGURE_OUTPUT AND NOT EXPECT_CONFIGURE_OUTPUT STREQUAL "")
  string(REPLACE "|" ";" expected "${EXPECT_CONFIGURE_OUTPUT}")
  # CMake wraps warning text: compare with runs of whitespace collapsed to one space.
  string(REGEX REPLACE "[ \t\r\n]+" " " flat_out "${step_out}")
  foreach(text IN LISTS expected)
    string(FIND "${flat_out}" "${text}" pos)
    if(pos EQUAL -1)
      message(FATAL_ERROR "configure output lacks: ${text}")
    endif()
  endforeach()
endif()
if(CONFIGURE_ONLY)
  message("configure OK")
  return()
endif()

run_step("build" "${CMAKE_COMMAND}" --build "${BINARY_DIR}" --config "${BUILD_TYPE}")
if(NOT step_rc EQUAL 0)
  message(FATAL_ERROR "build failed")
endif()

# The consumer registers its program with add_test(); it passes only if it exits 0.
run_step("run" "${CTEST_COMMAND}" --output-on-failure --no-tests=error -C "${BUILD_TYPE}"
  WORKING_DIRECTORY "${BINARY_DIR}")
if(NOT step_rc EQUAL 0)
  message(FATAL_ERROR "the consumer program failed")
endif()
message("consumer OK")
