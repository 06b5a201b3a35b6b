// The heap policy of the programs that time the reference executor.
#ifndef TENSAT_EXAMPLES_COMMON_HEAP_H
#define TENSAT_EXAMPLES_COMMON_HEAP_H

#ifdef __GLIBC__
#include <malloc.h>
#endif

namespace cli {

/// Keeps freed memory in the process: every block comes from the heap whatever its size, and the
/// heap never shrinks. The executor allocates each node's result; with glibc's defaults a large
/// one is mapped fresh and returned on free, so every run would page-fault its large tensors in
/// again, which costs more than the arithmetic of some kernels. Timings of the executor
/// (executor_bench, executor_profile, conv_epilogue_bench, calibrate_host, tensat-opt --measure)
/// all run under this policy, so that they measure the same thing. A no-op without glibc.
inline void keep_freed_memory() {
#ifdef __GLIBC__
  mallopt(M_MMAP_MAX, 0);
  mallopt(M_TRIM_THRESHOLD, -1);
#endif
}

}  // namespace cli

#endif  // TENSAT_EXAMPLES_COMMON_HEAP_H
