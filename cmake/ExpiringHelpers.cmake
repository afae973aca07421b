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
