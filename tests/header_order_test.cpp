// Every public header of tensat::tensat, after the nested namespaces' own `detail` and
// `internal` are declared (as some header declares them before another is read): a header in
// tensat::tensor that names the core's `detail::x` unqualified compiles only if no
// tensat::tensor::detail exists yet, that is, only in some include orders. Here it fails to
// compile. The headers then come in reverse order (the tensor dialect before the core it stands
// on). The ONNX headers need libonnx and have their own tests.

namespace tensat {
inline namespace v0 {
namespace tensor {
namespace detail {}
namespace internal {}
namespace models {
namespace detail {}
namespace internal {}
}  // namespace models
}  // namespace tensor
}  // namespace v0
}  // namespace tensat

#include <tensat/version.h>
#include <tensat/tensor/simple_cost.h>
#include <tensat/tensor/shape.h>
#include <tensat/tensor/rules.h>
#include <tensat/tensor/rule_instances.h>
#include <tensat/tensor/optimize.h>
#include <tensat/tensor/op.h>
#include <tensat/tensor/node.h>
#include <tensat/tensor/models.h>
#include <tensat/tensor/graph.h>
#include <tensat/tensor/fusion.h>
#include <tensat/tensor/executor.h>
#include <tensat/tensor/device_profile.h>
#include <tensat/tensor/cycle_filter.h>
#include <tensat/tensor/cuda_executor.h>
#include <tensat/tensor/cost_model.h>
#include <tensat/tensor/checked_rewrite.h>
#include <tensat/tensor/calibrate.h>
#include <tensat/tensor/analysis.h>
#include <tensat/tensor.h>
#include <tensat/tensat.h>
#include <tensat/io/sexpr.h>
#include <tensat/io/json.h>
#include <tensat/io/dot.h>
#include <tensat/fwd.h>
#include <tensat/extract/tree.h>
#include <tensat/extract/order.h>
#include <tensat/extract/ilp.h>
#include <tensat/extract/greedy_dag.h>
#include <tensat/extract/graph.h>
#include <tensat/extract/extraction.h>
#include <tensat/extract/dag_problem.h>
#include <tensat/extract/cost.h>
#include <tensat/extract/cbc.h>
#include <tensat/extract/branch_and_bound.h>
#include <tensat/detail/node_table.h>
#include <tensat/detail/id_buffer.h>
#include <tensat/detail/ematch_program.h>
#include <tensat/core/union_find.h>
#include <tensat/core/symbol.h>
#include <tensat/core/subst.h>
#include <tensat/core/span.h>
#include <tensat/core/small_vector.h>
#include <tensat/core/scheduler.h>
#include <tensat/core/runner.h>
#include <tensat/core/rule_set.h>
#include <tensat/core/rewrite.h>
#include <tensat/core/recexpr.h>
#include <tensat/core/pattern_ast.h>
#include <tensat/core/pattern.h>
#include <tensat/core/multipattern.h>
#include <tensat/core/language.h>
#include <tensat/core/id.h>
#include <tensat/core/hash.h>
#include <tensat/core/error.h>
#include <tensat/core/egraph.h>
#include <tensat/core/config.h>
#include <tensat/core/analysis.h>

#include <catch2/catch.hpp>

TEST_CASE("header order: every public header compiles after all the others, in reverse order") {
  // Something from the first header and from the one most headers stand on, used: a header
  // that no longer declares them fails the build, not only the run.
  const auto program = tensat::tensor::parse_program("(relu (input x f32 (ints 2 2)))");
  CHECK(tensat::tensor::simple_program_cost(program) > 0);
  CHECK(program.size() == 7);  // 2, 2, ints, x, f32, input, relu
}
