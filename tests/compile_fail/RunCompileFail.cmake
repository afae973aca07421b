# tests/compile_fail/RunCompileFail.cmake: one compile-fail case (ctest runs it with -P).
#   -DBINARY_DIR=<the build tree> -DTARGET=<cf_ target> and either
#   -DEXPECT_ERROR=<regex>: passes only if the build FAILS and its output matches the regex;
#   -DEXPECT_SUCCESS=ON:    passes only if the build succeeds (the harness's positive control).
foreach(_v BINARY_DIR TARGET)
  if(NOT DEFINED ${_v})
    message(FATAL_ERROR "RunCompileFail.cmake: ${_v} is not set")
  endif()
endforeach()
if(NOT DEFINED EXPECT_ERROR AND NOT EXPECT_SUCCESS)
  message(FATAL_ERROR "RunCompileFail.cmake: set EXPECT_ERROR or EXPECT_SUCCESS")
endif()
execute_process(
  COMMAND "${CMAKE_COMMAND}" --build "${BINARY_DIR}" --target "${TARGET}"
  RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _out)
if(EXPECT_SUCCESS)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "${TARGET}: the control failed to build (exit ${_rc}); the harness is broken:\n${_out}")
  endif()
  message(STATUS "${TARGET}: built, as expected")
  return()
endif()
if(_rc EQUAL 0)
  message(FATAL_ERROR "${TARGET}: built successfully, but it must not compile:\n${_out}")
endif()
if(NOT _out MATCHES "${EXPECT_ERROR}")
  message(FATAL_ERROR "${TARGET}: failed to build, but without the expected diagnostic\n  ${EXPECT_ERROR}\n${_out}")
endif()
message(STATUS "${TARGET}: refused with the expected diagnostic")
