// expiring/version.hpp: the library's version. CMake parses the three macros below.
#pragma once

#define EXPIRING_VERSION_MAJOR 0
#define EXPIRING_VERSION_MINOR 2
#define EXPIRING_VERSION_PATCH 0

#define EXPIRING_VERSION_STRING "0.2.0"
