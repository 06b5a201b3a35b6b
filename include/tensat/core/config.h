// Compiler-specific macros used by tensat's headers.
#ifndef TENSAT_CORE_CONFIG_H
#define TENSAT_CORE_CONFIG_H

/// Keeps a function out of line (for cold paths whose inlining would slow the hot one).
#if defined(__GNUC__) || defined(__clang__)
#define TENSAT_NOINLINE __attribute__((noinline))
#elif defined(_MSC_VER)
#define TENSAT_NOINLINE __declspec(noinline)
#else
#define TENSAT_NOINLINE
#endif

#endif  // TENSAT_CORE_CONFIG_H
