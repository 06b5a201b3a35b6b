// segment.h and segmented optimize (issue 30): cuts at narrow places, segments that are programs
// of their own, a stitch that computes what the original computes, and output that does not
// depend on the number of threads.
#include <catch2/catch.hpp>

#include <cstddef>
#include <string>
#include <vector>

#include <tensat/tensor.h>
#include <tensat/exec/executor.h>
#include <tensat/tensor/models.h>
#include <tensat/tensor/segment.h>

using namespace tensat;
using namespace tensat::tensor;

namespace {

std::vector<RecExpr<TensorNode>> unoptimized(const std::vector<Segment>& segments) {
  std::vector<RecExpr<TensorNode>> programs;
  for (const Segment& s : segments) programs.push_back(s.program);
  return programs;
}

}  // namespace

TEST_CASE("segment: a transformer encoder is cut between layers, into programs of their own") {
  const RecExpr<TensorNode> program = models::transformer_encoder(6, {16, 32, 4, 64}).program();
  // 29 operators a layer once the 6 bias broadcasts (weight-only: every segment copies those
  // it reads) are left out.
  const std::size_t ops = 6 * 29;
  const std::vector<Segment> segments = segment_program(program, 80);
  REQUIRE(segments.size() == 3);
  std::size_t covered = 0;
  for (std::size_t k = 0; k < segments.size(); ++k) {
    INFO("segment " << k);
    const Segment& s = segments[k];
    CHECK(s.first_op == covered);
    CHECK(s.ops <= 80);
    if (k + 1 < segments.size()) CHECK(s.ops >= 40);
    covered += s.ops;
    CHECK_NOTHROW(check_program(s.program));
    // One tensor (the residual stream, after a layernorm) crosses each cut.
    CHECK(s.live_in.size() == (k == 0 ? 0u : 1u));
    CHECK(s.live_out.size() == 1);
    if (k > 0) CHECK(program[s.live_in[0]].op() == Op::LayerNorm);
  }
  CHECK(covered == ops);
  // Stitched back unchanged, it computes what the program computes.
  const RecExpr<TensorNode> stitched = stitch(program, segments, unoptimized(segments));
  CHECK(count_ops(stitched) == count_ops(program));
  const VerifyResult v = verify(program, stitched);
  CHECK(v.ok);
  CHECK(v.nonfinite == 0);
}

TEST_CASE("segment: the readers of one tensor stay together when a cut can avoid them") {
  // x feeds three products (as Q, K, V do) and a long chain follows; with room for the cut
  // anywhere between 3 and 6 operators, the cheapest is after the three products' sum, not
  // between them.
  Graph g;
  const Tensor x = g.input("x", {8, 8});
  Tensor y =
      g.ewadd(g.ewadd(g.matmul(x, g.weight("a", {8, 8})), g.matmul(x, g.weight("b", {8, 8}))),
              g.matmul(x, g.weight("c", {8, 8})));
  y = g.relu(y);
  for (int i = 0; i < 6; ++i) y = g.tanh(g.matmul(y, g.weight("w" + std::to_string(i), {8, 8})));
  g.output(y);
  const RecExpr<TensorNode> program = g.program();
  const std::vector<Segment> segments = segment_program(program, 7);
  REQUIRE(segments.size() >= 2);
  CHECK(segments[0].ops >= 6);  // the three products, their two sums and the relu
  CHECK(program[segments[1].live_in[0]].op() != Op::MatMul);
  CHECK(verify(program, stitch(program, segments, unoptimized(segments))).ok);
}

TEST_CASE("segment: several outputs, weight-only terms and layouts cross the cuts") {
  Graph g;
  const Tensor x = g.input("x", {1, 4, 6, 6}, DType::F32, Layout::ChannelsLast);
  const Tensor w =
      g.transpose(g.weight("w", {4, 4, 3, 3}), {1, 0, 2, 3});  // weight-only, read everywhere
  Tensor y = x;
  std::vector<Tensor> outputs;
  for (int i = 0; i < 12; ++i) {
    y = g.relu(g.conv2d(y, w));
    if (i % 2 == 0) outputs.push_back(y);
  }
  for (Tensor t : outputs) g.output(t);
  const RecExpr<TensorNode> program = g.program();
  const std::vector<TensorInfo> infos = check_program(program);
  const std::vector<Segment> segments = segment_program(program, 6);
  REQUIRE(segments.size() >= 3);
  std::size_t outs = 0;
  for (const Segment& s : segments) {
    outs += s.live_out.size();
    for (Id in : s.live_in) CHECK(infos[in.index()].layout == Layout::ChannelsLast);
    CHECK_NOTHROW(check_program(s.program));
  }
  CHECK(outs > segments.size());  // some segment has two outputs: a noop root
  const RecExpr<TensorNode> stitched = stitch(program, segments, unoptimized(segments));
  CHECK(count_ops(stitched) == count_ops(program));
  CHECK(stitched.size() == program.size());  // equal nodes shared again: nothing duplicated
  CHECK(verify(program, stitched).ok);
}

TEST_CASE("segment: a small program, a zero limit or fused kernels give one segment") {
  const RecExpr<TensorNode> program = models::transformer_encoder(2, {16, 32, 4, 64}).program();
  CHECK(segment_program(program, 0).size() == 1);
  CHECK(segment_program(program, 1000).size() == 1);
  const std::vector<Segment> whole = segment_program(program, 1000);
  CHECK(stitch(program, whole, unoptimized(whole)) == program);
}

TEST_CASE("segment: segmented optimize verifies, keeps the gain, and does not depend on threads") {
  const RecExpr<TensorNode> program = models::transformer_encoder(8, {16, 64, 4, 128}).program();
  OptimizeOptions options;
  options.profile = find_profile("h100-sxm");
  options.fusion = true;
  options.segment_ops = 0;
  const OptimizeResult whole = optimize(program, options);
  CHECK(whole.segments.empty());
  options.segment_ops = 80;
  std::vector<RecExpr<TensorNode>>
      outputs;  // compared node for node (to_string would print the DAG as a tree)
  std::vector<SegmentReport> progress;  // filled from the workers, one call at a time; checked here
  for (std::size_t threads : {1, 2, 3}) {
    options.threads = threads;
    options.on_segment = [&](const SegmentReport& r) { progress.push_back(r); };
    const OptimizeResult r = optimize(program, options);
    REQUIRE(r.segments.size() == 4);
    for (std::size_t k = 0; k < r.segments.size(); ++k) CHECK(r.segments[k].index == k);
    outputs.push_back(r.optimized);
    const double gain = 1 - r.cost_after / r.cost_before,
                 whole_gain = 1 - whole.cost_after / whole.cost_before;
    CHECK(gain > 0.2);
    CHECK(gain >= whole_gain - 0.005);
    CHECK(verify(program, r.optimized).ok);
  }
  REQUIRE(progress.size() == 12);
  for (const SegmentReport& r : progress) {
    CHECK(r.count == 4);
    CHECK(r.ops <= 80);
  }
  CHECK(outputs[1] == outputs[0]);
  CHECK(outputs[2] == outputs[0]);
}

TEST_CASE("segment: the gain per layer of the transformer stacks does not decay with depth") {
  // Issue 30's bar at a size that runs in seconds: 2 layers against 24, cut into segments of at
  // most 250 operators, encoder and decoder, simple cost and h100 with fusion. bench/depth_bench
  // runs it at 400 layers and the default τ.
  for (const char* model : {"encoder", "decoder"})
    for (bool gpu : {false, true}) {
      INFO(model << (gpu ? ", h100-sxm + fusion" : ", simple cost"));
      OptimizeOptions options;
      options.segment_ops = 250;
      if (gpu) {
        options.profile = find_profile("h100-sxm");
        options.fusion = true;
      }
      std::size_t segments = 0;
      const auto gain = [&](int layers) {
        const OptimizeResult r = optimize(models::build_model(model, layers).program(), options);
        segments = r.segments.size();
        return 100.0 * (1.0 - r.cost_after / r.cost_before);
      };
      const double small = gain(2), deep = gain(24);
      CHECK(segments >= 3);
      CHECK(deep >= small - 0.5);
    }
}
