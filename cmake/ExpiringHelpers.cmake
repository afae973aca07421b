# ExpiringHelpers.cmake: helpers for the project's own targets (tests, examples, benchmarks).
# Nothing here is ever applied to the INTERFACE target `expiring`: consumers get no flags from us.

include_guard(GLOBAL)

# expiring_target_warnings(<target>)
#   Adds the project's warning set, -Werror when EXPIRING_WERROR is ON, and the sanitizer
#   flags (compile and link) when EXPIRING_SANITIZE is ON.
function(expiring_target_warnings tgt)
  if(MSVC)
    target_compile_options(${tgt} PRIVATE /W4 /permissive-)
    if(EXPIRING_WERROR)
      target_compile_options(${tgt} PRIVATE /WX)
    endif()
    if(EXPIRING_SANITIZE)
      target_compile_options(${tgt} PRIVATE /fsanitize=address)
    endif()
    return()
  endif()

  target_compile_options(${tgt} PRIVATE
    -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wold-style-cast -Wcast-align
    -Wdouble-promotion -Wformat=2 -Wimplicit-fallthrough)
  if(EXPIRING_WERROR)
    target_compile_options(${tgt} PRIVATE -Werror)
  endif()
  if(EXPIRING_SANITIZE)
    set(_san -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
    target_compile_options(${tgt} PRIVATE ${_san})
    target_link_options(${tgt} PRIVATE ${_san})
    # GCC: every ASan check as a call to the runtime rather than inline code (the default does
    # so only in functions with more than 7000 memory accesses). The same checks, in less
    # code: a Catch2 test file compiles in about 15 % less CPU (tests/test_set.cpp: 55 -> 47 s).
    if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
      target_compile_options(${tgt} PRIVATE --param=asan-instrumentation-with-call-threshold=0)
    endif()
  endif()
endfunction()

# expiring_fetch_allowed(<out-var>)
#   TRUE when a missing dependency may be fetched with FetchContent: only when
#   FETCHCONTENT_FULLY_DISCONNECTED is not ON (CI sets it ON and uses Debian packages).
function(expiring_fetch_allowed out)
  if(FETCHCONTENT_FULLY_DISCONNECTED)
    set(${out} FALSE PARENT_SCOPE)
  else()
    set(${out} TRUE PARENT_SCOPE)
  endif()
endfunction()

# expiring_test_dep_fetchable(<name> <git-repository> <git-tag> <out-var> <reason-var>)
#   For a dependency that only the tests or the benchmarks need (Catch2, Google Benchmark):
#   TRUE when fetching it with FetchContent can be expected to work, else FALSE with the reason
#   in <reason-var>. Never fatal, never waits longer than EXPIRING_FETCH_PROBE_TIMEOUT:
#     * FALSE if FETCHCONTENT_FULLY_DISCONNECTED is ON or EXPIRING_FETCH_TEST_DEPS is OFF;
#     * TRUE without a probe if FETCHCONTENT_SOURCE_DIR_<NAME> points at a local copy or an
#       earlier configure already populated it (FetchContent then does not go online);
#     * else `git ls-remote` of the tag, bounded by the timeout: FetchContent's own download
#       failure is a FATAL_ERROR that cannot be caught, so reachability is checked first.
#   A fetch can still fail after a successful probe (the network drops in between): that
#   failure stays FetchContent's, and fatal. EXPIRING_FETCH_TEST_DEPS=OFF avoids both.
function(expiring_test_dep_fetchable name repository tag out reason)
  set(${out} FALSE PARENT_SCOPE)
  expiring_fetch_allowed(_can_fetch)
  if(NOT _can_fetch)
    set(${reason} "FETCHCONTENT_FULLY_DISCONNECTED is ON" PARENT_SCOPE)
    return()
  endif()
  if(NOT EXPIRING_FETCH_TEST_DEPS)
    set(${reason} "EXPIRING_FETCH_TEST_DEPS is OFF" PARENT_SCOPE)
    return()
  endif()
  string(TOUPPER "${name}" _upper)
  string(TOLOWER "${name}" _lower)
  if(FETCHCONTENT_BASE_DIR)
    set(_base "${FETCHCONTENT_BASE_DIR}")
  else()
    set(_base "${CMAKE_BINARY_DIR}/_deps")
  endif()
  if(FETCHCONTENT_SOURCE_DIR_${_upper} OR EXISTS "${_base}/${_lower}-src/CMakeLists.txt")
    set(${out} TRUE PARENT_SCOPE)
    return()
  endif()
  find_package(Git QUIET)
  if(NOT GIT_EXECUTABLE)
    set(${reason} "git was not found" PARENT_SCOPE)
    return()
  endif()
  message(STATUS "expiring: checking that ${repository} (${tag}) can be fetched")
  execute_process(
    COMMAND "${GIT_EXECUTABLE}" ls-remote --exit-code "${repository}" "${tag}"
    RESULT_VARIABLE _rc
    OUTPUT_QUIET
    ERROR_VARIABLE _err
    TIMEOUT ${EXPIRING_FETCH_PROBE_TIMEOUT})
  if(NOT _rc STREQUAL "0")
    string(STRIP "${_err}" _err)
    string(REGEX REPLACE "\n.*" "" _err "${_err}")  # its first line is enough
    if(_err STREQUAL "")
      set(_err "exit status ${_rc}")
    endif()
    set(${reason} "${repository} is not reachable (git ls-remote: ${_err})" PARENT_SCOPE)
    return()
  endif()
  set(${out} TRUE PARENT_SCOPE)
endfunction()

# expiring_skip_missing_dep(<dependency> <part> <debian-package> <option> <reason>)
#   The warning shown when a dependency of a test-only <part> (the test suite, the benchmarks)
#   is missing and is not fetched: what is missing, what is skipped, which Debian package
#   provides it, and how to turn the part off.
function(expiring_skip_missing_dep dep part package option reason)
  message(WARNING
    "expiring: ${dep} not found and not fetched (${reason}): skipping ${part}.\n"
    "  To build ${part}, install ${dep} (Debian/Ubuntu: apt-get install ${package}) or, with "
    "network access, allow fetching it (FETCHCONTENT_FULLY_DISCONNECTED=OFF and "
    "EXPIRING_FETCH_TEST_DEPS=ON). To silence this warning, configure with -D${option}=OFF.")
endfunction()
