// Skipping a test case whose data is absent: TENSAT_SKIP prints a marker that ctest's
// SKIP_REGULAR_EXPRESSION (tests/CMakeLists.txt) turns into a reported skip, then leaves the
// test case. A test whose data is missing must show as skipped, never as passed.
#ifndef TENSAT_TESTS_SUPPORT_SKIP_H
#define TENSAT_TESTS_SUPPORT_SKIP_H

#include <iostream>

/// The marker ctest looks for; keep it in step with tests/CMakeLists.txt.
#define TENSAT_SKIP_MARKER "tensat-skipped:"

/// Prints `tensat-skipped: <why>` and returns from the enclosing test case.
#define TENSAT_SKIP(why)                                     \
  do {                                                       \
    std::cout << TENSAT_SKIP_MARKER " " << why << std::endl; \
    return;                                                  \
  } while (false)

#endif  // TENSAT_TESTS_SUPPORT_SKIP_H
