// One layer's consumer (CMakeLists.txt): every header of the layer, then one use of it.
#include "layer_headers.h"

#include <cstdio>
#include <string>

#if (defined(TENSAT_CONSUMER_LAYER_core) || defined(TENSAT_CONSUMER_LAYER_tensor)) && \
    defined(NLOHMANN_JSON_VERSION_MAJOR)
#error "a core or dialect header included nlohmann/json"
#endif
#if !defined(TENSAT_CONSUMER_LAYER_exec) && !defined(TENSAT_CONSUMER_LAYER_onnx) && \
    defined(EIGEN_WORLD_VERSION)
#error "a header below exec/ included Eigen"
#endif

namespace {

[[maybe_unused]] bool check(bool ok, const char* what) {
  std::printf("%s: %s\n", ok ? "ok" : "FAIL", what);
  return ok;
}

}  // namespace

int main() {
#if defined(TENSAT_CONSUMER_LAYER_core)
  using L = tensat::SymbolLang;
  tensat::Runner<L> runner;
  runner.with_expr(tensat::parse_expr<L>("(* a 1)"));
  runner.run(std::vector<tensat::Rewrite<L, tensat::NoAnalysis>>{
      tensat::rewrite<L>("mul-one", "(* ?a 1)", "?a")});
  const auto root = runner.roots().front();
  const tensat::TreeExtractor extractor(runner.egraph(), tensat::AstSize{});
  const auto best = extractor.find_best(root).second;
  return check(best.to_string() == "a", "core: (* a 1) extracts to a") ? 0 : 1;
#elif defined(TENSAT_CONSUMER_LAYER_io)
  const auto json = tensat::parse_json(R"({"nodes": {}})");
  return check(json.contains("nodes"), "io: parse_json") ? 0 : 1;
#elif defined(TENSAT_CONSUMER_LAYER_tensor)
  const auto program = tensat::tensor::parse_program("(relu (input x f32 (ints 2 3)))");
  return check(program.size() == 7, "tensor: parse_program") ? 0 : 1;
#elif defined(TENSAT_CONSUMER_LAYER_cost)
  const auto program = tensat::tensor::parse_program("(relu (input x f32 (ints 64 64)))");
  const auto profile = tensat::tensor::find_profile("xeon-spr-56c");
  return check(tensat::tensor::program_time(program, profile) > 0, "cost: program_time") ? 0 : 1;
#elif defined(TENSAT_CONSUMER_LAYER_opt)
  const auto program = tensat::tensor::parse_program("(relu (input x f32 (ints 4 4)))");
  const auto result = tensat::tensor::optimize(program);
  return check(result.optimized.size() > 0, "opt: optimize") ? 0 : 1;
#elif defined(TENSAT_CONSUMER_LAYER_exec)
  const auto program = tensat::tensor::parse_program("(relu (input x f32 (ints 2 2)))");
  const auto out = tensat::tensor::execute(program, tensat::tensor::random_bindings(program, 1));
  return check(out.size() == 1, "exec: execute") ? 0 : 1;
#elif defined(TENSAT_CONSUMER_LAYER_onnx)
  const auto ops = tensat::onnx::supported_operators();
  return check(!ops.empty(), "onnx: supported_operators") ? 0 : 1;
#else
#error "TENSAT_CONSUMER_LAYER_<layer> is not defined"
#endif
}
