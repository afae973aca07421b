# ExpiringHiredis.cmake: find hiredis (>= 0.14) as the imported target expiring::hiredis.
#
# hiredis 0.14 (Debian 12's libhiredis-dev) installs no CMake package: it is found with
# pkg-config, else by its header and library. Used by expiring's own CMakeLists.txt and by
# the installed package config (for the expiring::redis component). Does nothing if the
# target exists already; leaves it undefined when hiredis is not found.
include_guard(GLOBAL)

macro(expiring_find_hiredis)
  if(NOT TARGET expiring::hiredis)
    find_package(PkgConfig QUIET)
    if(PKG_CONFIG_FOUND)
      pkg_check_modules(EXPIRING_HIREDIS QUIET IMPORTED_TARGET hiredis>=0.14)
    endif()
    if(TARGET PkgConfig::EXPIRING_HIREDIS)
      add_library(expiring::hiredis INTERFACE IMPORTED)
      set_target_properties(expiring::hiredis PROPERTIES INTERFACE_LINK_LIBRARIES PkgConfig::EXPIRING_HIREDIS)
    else()
      find_path(EXPIRING_HIREDIS_INCLUDE_DIR hiredis/hiredis.h)
      find_library(EXPIRING_HIREDIS_LIBRARY hiredis)
      if(EXPIRING_HIREDIS_INCLUDE_DIR AND EXPIRING_HIREDIS_LIBRARY)
        add_library(expiring::hiredis INTERFACE IMPORTED)
        set_target_properties(expiring::hiredis PROPERTIES
          INTERFACE_INCLUDE_DIRECTORIES "${EXPIRING_HIREDIS_INCLUDE_DIR}"
          INTERFACE_LINK_LIBRARIES "${EXPIRING_HIREDIS_LIBRARY}")
      endif()
    endif()
  endif()
endmacro()
