// tensat — equality saturation for C++ with a tensor dialect.
// Version number: the single source of truth, parsed by CMakeLists.txt.
#ifndef TENSAT_VERSION_H
#define TENSAT_VERSION_H

/// tensat's version as major * 10000 + minor * 100 + patch (fmt's convention).
#define TENSAT_VERSION 100

#define TENSAT_VERSION_MAJOR (TENSAT_VERSION / 10000)
#define TENSAT_VERSION_MINOR (TENSAT_VERSION / 100 % 100)
#define TENSAT_VERSION_PATCH (TENSAT_VERSION % 100)

#endif  // TENSAT_VERSION_H
