// tests/main.cpp: Catch2 v2's main(). With Catch2 v3 this file is not built
// (tests/CMakeLists.txt links Catch2::Catch2WithMain instead).
#define CATCH_CONFIG_MAIN
#include "catch.hpp"
