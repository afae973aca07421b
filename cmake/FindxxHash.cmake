# FindxxHash.cmake: locate the xxHash header (expiring/hash.hpp uses it in inline mode).
#
# Debian 12's libxxhash-dev (0.8.1) ships no CMake package config, only libxxhash.pc, so this
# module tries, in order:
#   1. an upstream xxHash CMake config (find_package(xxHash CONFIG)), using its include dirs;
#   2. pkg-config `libxxhash`;
#   3. a plain search for xxhash.h.
#
# Defines:
#   xxHash_FOUND, xxHash_INCLUDE_DIR, xxHash_INCLUDE_DIRS, xxHash_VERSION
#   xxHash::xxHash  INTERFACE IMPORTED target: the include dir only. Nothing is linked and no
#                   macro is set: expiring/hash.hpp defines XXH_INLINE_ALL around its own
#                   #include <xxhash.h> and removes it again, so it never reaches users' code.
#
# Hint: set xxHash_ROOT or xxHash_INCLUDE_DIR to point at a specific copy.

if(TARGET xxHash::xxHash)
  # Already provided (by an earlier call, or by the consumer): nothing to do.
  if(NOT xxHash_INCLUDE_DIR)
    get_target_property(xxHash_INCLUDE_DIR xxHash::xxHash INTERFACE_INCLUDE_DIRECTORIES)
  endif()
  set(xxHash_FOUND TRUE)
  return()
endif()

set(_xxhash_hints "")

# 1. Upstream CMake config (xxHash built with cmake_unofficial/ exports xxHash::xxhash).
if(NOT xxHash_INCLUDE_DIR)
  find_package(xxHash CONFIG QUIET NO_CMAKE_PACKAGE_REGISTRY NO_CMAKE_SYSTEM_PACKAGE_REGISTRY)
  if(TARGET xxHash::xxhash)
    get_target_property(_xxhash_cfg_inc xxHash::xxhash INTERFACE_INCLUDE_DIRECTORIES)
    if(_xxhash_cfg_inc)
      list(APPEND _xxhash_hints ${_xxhash_cfg_inc})
    endif()
    unset(_xxhash_cfg_inc)
  endif()
endif()

# 2. pkg-config.
if(NOT xxHash_INCLUDE_DIR)
  find_package(PkgConfig QUIET)
  if(PKG_CONFIG_FOUND)
    pkg_check_modules(PC_xxHash QUIET libxxhash)
    if(PC_xxHash_FOUND)
      list(APPEND _xxhash_hints ${PC_xxHash_INCLUDEDIR} ${PC_xxHash_INCLUDE_DIRS})
    endif()
  endif()
endif()

# 3. Plain header search (uses the hints from 1. and 2. first).
find_path(xxHash_INCLUDE_DIR
  NAMES xxhash.h
  HINTS ${_xxhash_hints}
  PATH_SUFFIXES include
  DOC "Directory containing xxhash.h")
mark_as_advanced(xxHash_INCLUDE_DIR)
unset(_xxhash_hints)

if(xxHash_INCLUDE_DIR AND EXISTS "${xxHash_INCLUDE_DIR}/xxhash.h")
  file(STRINGS "${xxHash_INCLUDE_DIR}/xxhash.h" _xxhash_version_lines
       REGEX "^#define XXH_VERSION_(MAJOR|MINOR|RELEASE)[ \t]+[0-9]+")
  foreach(_part MAJOR MINOR RELEASE)
    string(REGEX MATCH "XXH_VERSION_${_part}[ \t]+([0-9]+)" _m "${_xxhash_version_lines}")
    set(_xxhash_${_part} "${CMAKE_MATCH_1}")
  endforeach()
  if(NOT _xxhash_MAJOR STREQUAL "" AND NOT _xxhash_MINOR STREQUAL "" AND NOT _xxhash_RELEASE STREQUAL "")
    set(xxHash_VERSION "${_xxhash_MAJOR}.${_xxhash_MINOR}.${_xxhash_RELEASE}")
  endif()
  unset(_xxhash_version_lines)
  unset(_xxhash_MAJOR)
  unset(_xxhash_MINOR)
  unset(_xxhash_RELEASE)
  unset(_m)
  unset(_part)
endif()

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(xxHash
  REQUIRED_VARS xxHash_INCLUDE_DIR
  VERSION_VAR xxHash_VERSION)

if(xxHash_FOUND)
  set(xxHash_INCLUDE_DIRS "${xxHash_INCLUDE_DIR}")
  if(NOT TARGET xxHash::xxHash)
    add_library(xxHash::xxHash INTERFACE IMPORTED)
    set_target_properties(xxHash::xxHash PROPERTIES
      INTERFACE_INCLUDE_DIRECTORIES "${xxHash_INCLUDE_DIR}")
  endif()
endif()
