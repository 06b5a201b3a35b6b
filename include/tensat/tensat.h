// tensat: the core engine in one include (the Eigen/Dense of tensat).
#ifndef TENSAT_TENSAT_H
#define TENSAT_TENSAT_H

#include "tensat/version.h"
#include "tensat/fwd.h"

#include "tensat/core/id.h"
#include "tensat/core/span.h"
#include "tensat/core/small_vector.h"
#include "tensat/core/hash.h"
#include "tensat/core/symbol.h"
#include "tensat/core/error.h"
#include "tensat/core/language.h"
#include "tensat/core/recexpr.h"
#include "tensat/core/union_find.h"
#include "tensat/core/analysis.h"
#include "tensat/core/explain.h"
#include "tensat/core/egraph.h"
#include "tensat/core/subst.h"
#include "tensat/core/pattern_ast.h"
#include "tensat/core/pattern.h"
#include "tensat/core/multipattern.h"
#include "tensat/core/rewrite.h"
#include "tensat/core/proof_check.h"
#include "tensat/core/rule_set.h"
#include "tensat/core/scheduler.h"
#include "tensat/core/runner.h"
#include "tensat/core/sexpr.h"
#include "tensat/extract/cost.h"
#include "tensat/extract/graph.h"
#include "tensat/extract/extraction.h"
#include "tensat/extract/tree.h"
#include "tensat/extract/order.h"
#include "tensat/extract/greedy_dag.h"
#include "tensat/extract/ilp.h"
#include "tensat/extract/extract_dag.h"

#endif  // TENSAT_TENSAT_H
