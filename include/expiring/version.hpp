// expiring/version.hpp: the library's version. CMake parses the three macros below.
#pragma once

// The major version, an integer literal for `#if`. The project uses Semantic Versioning
// (CHANGELOG.md).
#define EXPIRING_VERSION_MAJOR 0
// The minor version: before 1.0.0, a new minor version may break the API.
#define EXPIRING_VERSION_MINOR 2
// The patch version: fixes only.
#define EXPIRING_VERSION_PATCH 0

// The same version as a string literal, "MAJOR.MINOR.PATCH".
#define EXPIRING_VERSION_STRING "0.2.0"
