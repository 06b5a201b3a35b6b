// tensat/tensor.h: the tensor dialect in one include (ops, shapes, builder, rules, recognition
// rules, optimizer, models, device profiles and the roofline cost model; not calibrate.h, which
// compiles Eigen).
#ifndef TENSAT_TENSOR_H
#define TENSAT_TENSOR_H

#include "tensat/tensat.h"

#include "tensat/tensor/op.h"
#include "tensat/tensor/node.h"
#include "tensat/tensor/tensor_info.h"
#include "tensat/tensor/shape.h"
#include "tensat/tensor/analysis.h"
#include "tensat/tensor/graph.h"
#include "tensat/tensor/checked_rewrite.h"
#include "tensat/tensor/rules.h"
#include "tensat/tensor/recognize.h"
#include "tensat/tensor/cycle_filter.h"
#include "tensat/cost/simple_cost.h"
#include "tensat/tensor/post_ops.h"
#include "tensat/tensor/fusion.h"
#include "tensat/opt/explain.h"
#include "tensat/opt/optimize.h"
#include "tensat/tensor/segment.h"
#include "tensat/tensor/squeeze_batch.h"
#include "tensat/cost/device_profile.h"
#include "tensat/cost/profile_json.h"
#include "tensat/cost/profiles.h"
#include "tensat/cost/op_work.h"
#include "tensat/cost/fused_group.h"
#include "tensat/cost/cost_model.h"
#include "tensat/cost/uncertainty.h"
#include "tensat/tensor/models.h"

#endif  // TENSAT_TENSOR_H
