// The operator records (op.h): every operator's name round-trips, and its class and traits are
// the ones the passes rely on (the lists below are the dialect's specification of each class).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstddef>
#include <initializer_list>
#include <string>

#include <tensat/tensor.h>

using namespace tensat::tensor;

namespace {

bool in(Op op, std::initializer_list<Op> ops) {
  return std::find(ops.begin(), ops.end(), op) != ops.end();
}

}  // namespace

TEST_CASE("op records: names round-trip and arities are ordered") {
  for (std::size_t i = 0; i < kNumOps; ++i) {
    const Op op = static_cast<Op>(i);
    const OpInfo& info = op_info(op);
    INFO("op " << i << " " << std::string(info.name));
    CHECK(!info.name.empty());
    CHECK(info.min_children <= info.max_children);
    if (op == Op::Num || op == Op::Sym) {
      CHECK(!op_from_name(info.name));  // atoms, never named
    } else {
      REQUIRE(op_from_name(info.name));
      CHECK(*op_from_name(info.name) == op);
    }
  }
}

TEST_CASE("op records: each class holds exactly its operators") {
  using O = Op;
  for (std::size_t i = 0; i < kNumOps; ++i) {
    const Op op = static_cast<Op>(i);
    INFO(std::string(op_name(op)));
    CHECK(is_attribute(op) == in(op, {O::Num, O::Sym, O::Ints}));
    CHECK(is_source(op) == in(op, {O::Input, O::Weight, O::Scalar}));
    CHECK(is_unary_elementwise(op) == in(op, {O::Relu, O::Tanh, O::Sigmoid, O::Gelu, O::GeluErf,
                                              O::Silu, O::HardSwish, O::Exp, O::Sqrt, O::Erf}));
    CHECK(is_binary_elementwise(op) == in(op, {O::EwAdd, O::EwMul, O::EwSub, O::EwDiv, O::EwPow}));
    CHECK(is_elementwise(op) ==
          (is_unary_elementwise(op) || is_binary_elementwise(op) || in(op, {O::SMul, O::Clip})));
    CHECK(is_contraction(op) == in(op, {O::MatMul, O::Conv2d}));
    CHECK(is_reduction(op) == in(op, {O::ReduceSum, O::ReduceMax, O::ReduceMean}));
    CHECK(is_view_op(op) ==
          in(op, {O::Num, O::Sym, O::Ints, O::Input, O::Weight, O::Scalar, O::Noop, O::Split,
                  O::Split0, O::Split1, O::Reshape, O::Broadcast, O::Arg}));
    CHECK(is_injective(op) == in(op, {O::Transpose, O::Slice, O::Pad, O::Concat}));
    CHECK(is_gather(op) == (is_injective(op) || op == O::Broadcast));
    CHECK(is_post_activation(op) ==
          in(op, {O::Relu, O::Sigmoid, O::Tanh, O::Silu, O::HardSwish, O::GeluErf}));
    // The classes partition the operators; the traits only refine.
    const int classes = is_attribute(op) + is_source(op) + is_unary_elementwise(op) +
                        is_binary_elementwise(op) + (op_class(op) == OpClass::ScalarElementwise) +
                        is_contraction(op) + is_reduction(op) + (op_class(op) == OpClass::Other);
    CHECK(classes == 1);
  }
}
