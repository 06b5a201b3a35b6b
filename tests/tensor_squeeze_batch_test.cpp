// squeeze_batch.h: activations [1, a, b] computed as [a, b], the same values, the outputs' shapes
// kept, and the program left alone where nothing is gained.
#include <catch2/catch.hpp>

#include <cstddef>
#include <string>

#include <tensat/exec/executor.h>
#include <tensat/tensor.h>
#include <tensat/tensor/squeeze_batch.h>

using namespace tensat;
using namespace tensat::tensor;

namespace {

// Two products of a batch-1 activation, flattened and reshaped back as ONNX import writes a 3-d
// MatMul, with a bias, a ReLU, a positional weight [1, 4, 6] and a layer norm between them.
const char* const kTwoProducts =
    "(layernorm"
    " (reshape (ints 1 4 6)"
    "  (matmul 0"
    "   (reshape (ints 4 6)"
    "    (ewadd (weight pos f32 (ints 1 4 6))"
    "     (relu (ewadd (reshape (ints 1 4 6)"
    "                   (matmul 0 (reshape (ints 4 8) (input x f32 (ints 1 4 8)))"
    "                    (weight w1 f32 (ints 8 6))))"
    "            (broadcast (ints 1 4 6) (weight b1 f32 (ints 6)))))))"
    "   (weight w2 f32 (ints 6 6))))"
    " (weight g f32 (ints 6)) (weight beta f32 (ints 6)))";

std::size_t count(const RecExpr<TensorNode>& p, Op op) {
  std::size_t n = 0;
  for (std::size_t i = 0; i < p.size(); ++i) n += p[Id(i)].op() == op;
  return n;
}

}  // namespace

TEST_CASE("squeeze_batch: the products of a batch-1 stack become 2-d, computing the same values") {
  const RecExpr<TensorNode> program = parse_program(kTwoProducts);
  const SqueezedProgram s = squeeze_unit_batch(program);
  REQUIRE(s.changed());
  // The first product's reshape back, the second's flattening and its reshape back vanish; the
  // layer norm's result gets one back to [1, 4, 6] (the output keeps its shape). The input's
  // flattening stays (it is not squeezed: an input keeps its shape).
  CHECK(s.removed == 3);
  CHECK(s.boundary == 1);
  CHECK(s.squeezed == 6);  // reshape, ewadd, relu, ewadd, reshape, layernorm
  const std::vector<TensorInfo> infos = check_program(s.program);
  CHECK(infos[s.program.root().index()].dims == Dims{1, 4, 6});
  // Reshapes left: the input's flattening, the weight's [1, 4, 6] -> [4, 6] and the output's.
  CHECK(count(s.program, Op::Reshape) == 3);
  for (std::size_t i = 0; i < s.program.size(); ++i) {
    const TensorNode& n = s.program[Id(i)];
    if (n.op() == Op::LayerNorm || n.op() == Op::Relu || n.op() == Op::EwAdd)
      CHECK(infos[i].dims.size() == 2);
  }
  const VerifyResult v = verify(program, s.program);
  CHECK(v.ok);
  CHECK(v.nonfinite == 0);
}

TEST_CASE("squeeze_batch: softmax shifts its axis, a 3-d broadcast source is reshaped first") {
  const RecExpr<TensorNode> program = parse_program(
      "(softmax 2 (reshape (ints 1 4 6) (matmul 0 (reshape (ints 4 6) (ewmul (reshape (ints 1 4 "
      "6) (matmul 0 (reshape (ints 4 8) (input x f32 (ints 1 4 8))) (weight w f32 (ints 8 6)))) "
      "(broadcast (ints 1 4 6) (weight s f32 (ints 1 1 6))))) (weight w2 f32 (ints 6 6)))))");
  const SqueezedProgram s = squeeze_unit_batch(program);
  REQUIRE(s.changed());
  bool axis_one = false;
  for (std::size_t i = 0; i < s.program.size(); ++i) {
    const TensorNode& n = s.program[Id(i)];
    if (n.op() == Op::Softmax) axis_one = s.program[n.children()[0]].value() == 1;
  }
  CHECK(axis_one);
  CHECK(check_program(s.program)[s.program.root().index()].dims == Dims{1, 4, 6});
  CHECK(verify(program, s.program).ok);
}

TEST_CASE("squeeze_batch: without products to flatten, the program comes back unchanged") {
  SECTION("activations only") {
    const RecExpr<TensorNode> program = parse_program("(tanh (relu (input x f32 (ints 1 4 8))))");
    const SqueezedProgram s = squeeze_unit_batch(program);
    CHECK_FALSE(s.changed());
    CHECK(s.program == program);
  }
  SECTION("a 4-d network") {
    const RecExpr<TensorNode> program = parse_program(
        "(relu (conv2d 1 1 0 0 (input x f32 (ints 1 3 8 8)) (weight w f32 (ints 4 3 3 3))))");
    CHECK_FALSE(squeeze_unit_batch(program).changed());
  }
  SECTION("one product whose result an operator that needs the batch axis reads") {
    // The reshape back is removed but one is added for the concat: no gain.
    const RecExpr<TensorNode> program = parse_program(
        "(concat 1 (reshape (ints 1 4 6) (matmul 0 (reshape (ints 4 8) (input x f32 (ints 1 4 "
        "8))) (weight w f32 (ints 8 6)))) (input y f32 (ints 1 4 6)))");
    const SqueezedProgram s = squeeze_unit_batch(program);
    CHECK_FALSE(s.changed());
    CHECK(s.program == program);
  }
}
