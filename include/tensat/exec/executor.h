// A reference executor of the tensor dialect on the CPU (Eigen): evaluates programs on concrete
// tensors, generates deterministic random inputs and weights, precomputes weight-only subgraphs,
// and checks numerically that an optimized program computes what the original did.
// The parts, each in its own header: host_tensor.h, weight_values.h, execute.h, verify.h,
// timing.h, profile.h
// (the kernels by family, the fused loop and the evaluator under exec/detail/).
#ifndef TENSAT_EXEC_EXECUTOR_H
#define TENSAT_EXEC_EXECUTOR_H

#include "tensat/exec/execute.h"
#include "tensat/exec/host_tensor.h"
#include "tensat/exec/profile.h"
#include "tensat/exec/timing.h"
#include "tensat/exec/verify.h"
#include "tensat/exec/weight_values.h"

#endif  // TENSAT_EXEC_EXECUTOR_H
