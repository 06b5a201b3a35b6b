// Shape and dtype inference for every operator of the tensor dialect: valid programs give the
// expected shape, invalid ones a ShapeError naming the node and the reason; the builder checks
// as it builds; bad text gives a ParseError with its offset.
#include <catch2/catch.hpp>

#include <string>

#include <tensat/tensor.h>

using namespace tensat;
using namespace tensat::tensor;

namespace {

// Shorthand: "(input NAME f32 (ints DIMS))".
std::string in(const std::string& name, const std::string& dims, const std::string& dtype = "f32") {
  return "(input " + name + " " + dtype + " (ints " + dims + "))";
}
std::string wt(const std::string& name, const std::string& dims) {
  return "(weight " + name + " f32 (ints " + dims + "))";
}

std::string root_info(const std::string& text) {
  const RecExpr<TensorNode> program = parse_program(text);
  return describe(check_program(program).back());
}

std::string error_of(const std::string& text) {
  try {
    (void)parse_program(text);
  } catch (const ShapeError& e) {
    return e.reason();
  }
  return "no error";
}

}  // namespace

TEST_CASE("shape: sources carry name, dtype and shape") {
  CHECK(root_info(in("x", "1 512")) == "tensor f32 [1, 512]");
  CHECK(root_info(in("x", "2 3", "bf16")) == "tensor bf16 [2, 3]");
  CHECK(root_info(in("x", "", "f16")) == "tensor f16 []");
  CHECK_THAT(error_of(in("x", "2 0")), Catch::Contains("not positive"));
  CHECK_THAT(error_of(in("x", "2", "f64")), Catch::Contains("unknown dtype 'f64'"));
  CHECK_THAT(error_of("(input x f32 3)"), Catch::Contains("not an ints list"));
  const auto infos = check_program(parse_program(wt("w", "4 4")));
  CHECK(infos.back().weight_only);
  CHECK_FALSE(check_program(parse_program(in("x", "4"))).back().weight_only);
}

TEST_CASE("shape: elementwise ops need equal shapes and dtypes") {
  const std::string a = in("a", "2 3"), b = in("b", "2 3"), c = in("c", "3 2"),
                    h = in("h", "2 3", "f16");
  for (const char* op : {"ewadd", "ewmul"}) {
    CHECK(root_info(std::string("(") + op + " " + a + " " + b + ")") == "tensor f32 [2, 3]");
    CHECK_THAT(error_of(std::string("(") + op + " " + a + " " + c + ")"),
               Catch::Contains("shapes [2, 3] and [3, 2] differ"));
    CHECK_THAT(error_of(std::string("(") + op + " " + a + " " + h + ")"),
               Catch::Contains("dtypes differ"));
  }
  for (const char* op : {"relu", "tanh", "sigmoid", "gelu", "exp", "sqrt", "erf"}) {
    CHECK(root_info(std::string("(") + op + " " + a + ")") == "tensor f32 [2, 3]");
    CHECK_THAT(error_of(std::string("(") + op + " 3)"), Catch::Contains("not a tensor"));
  }
  CHECK(root_info("(smul " + a + " " + in("s", "1") + ")") == "tensor f32 [2, 3]");
  CHECK(root_info("(smul " + a + " " + in("s", "") + ")") == "tensor f32 [2, 3]");
  CHECK_THAT(error_of("(smul " + a + " " + b + ")"), Catch::Contains("want one element"));
}

TEST_CASE("shape: matmul, batched matmul and activations") {
  CHECK(root_info("(matmul 0 " + in("a", "4 8") + " " + wt("w", "8 5") + ")") ==
        "tensor f32 [4, 5]");
  CHECK(root_info("(matmul 2 " + in("a", "3 4 8") + " " + in("b", "3 8 5") + ")") ==
        "tensor f32 [3, 4, 5]");
  CHECK_THAT(error_of("(matmul 0 " + in("a", "4 8") + " " + in("b", "7 5") + ")"),
             Catch::Contains("contraction"));
  CHECK_THAT(error_of("(matmul 0 " + in("a", "3 4 8") + " " + in("b", "2 8 5") + ")"),
             Catch::Contains("batch dimensions"));
  CHECK_THAT(error_of("(matmul 0 " + in("a", "8") + " " + in("b", "8 5") + ")"),
             Catch::Contains("ranks"));
  CHECK_THAT(error_of("(matmul 7 " + in("a", "4 8") + " " + in("b", "8 5") + ")"),
             Catch::Contains("activation 7"));
}

TEST_CASE("shape: conv2d with strides, padding and groups") {
  const std::string x = in("x", "1 8 32 32");
  CHECK(root_info("(conv2d 1 1 0 0 " + x + " " + wt("w", "16 8 3 3") + ")") ==
        "tensor f32 [1, 16, 32, 32]");
  CHECK(root_info("(conv2d 2 2 0 2 " + x + " " + wt("w", "16 8 3 3") + ")") ==
        "tensor f32 [1, 16, 16, 16]");
  CHECK(root_info("(conv2d 2 2 1 0 " + x + " " + wt("w", "16 8 3 3") + ")") ==
        "tensor f32 [1, 16, 15, 15]");
  CHECK(root_info("(conv2d 1 1 1 0 " + x + " " + wt("w", "16 8 5 5") + ")") ==
        "tensor f32 [1, 16, 28, 28]");
  // Grouped: 8 input channels, weight takes 2 per group: 4 groups.
  CHECK(root_info("(conv2d 1 1 0 0 " + x + " " + wt("w", "16 2 3 3") + ")") ==
        "tensor f32 [1, 16, 32, 32]");
  CHECK_THAT(error_of("(conv2d 1 1 0 0 " + x + " " + wt("w", "16 3 3 3") + ")"),
             Catch::Contains("not a multiple"));
  CHECK_THAT(error_of("(conv2d 1 1 0 0 " + x + " " + wt("w", "6 2 3 3") + ")"),
             Catch::Contains("multiple of the 4 groups"));
  CHECK_THAT(error_of("(conv2d 1 1 2 0 " + x + " " + wt("w", "16 8 3 3") + ")"),
             Catch::Contains("padding 2"));
  CHECK_THAT(error_of("(conv2d 0 1 0 0 " + x + " " + wt("w", "16 8 3 3") + ")"),
             Catch::Contains("must be positive"));
  CHECK_THAT(error_of("(conv2d 1 1 1 0 " + in("s", "1 8 2 2") + " " + wt("w", "16 8 3 3") + ")"),
             Catch::Contains("larger than input"));
  CHECK_THAT(error_of("(conv2d 1 1 0 0 " + in("a", "8 32 32") + " " + wt("w", "16 8 3 3") + ")"),
             Catch::Contains("rank 4"));
}

TEST_CASE("shape: pooling") {
  const std::string x = in("x", "1 8 32 32");
  CHECK(root_info("(poolmax 3 3 2 2 0 0 " + x + ")") == "tensor f32 [1, 8, 16, 16]");
  CHECK(root_info("(poolavg 3 3 1 1 1 2 " + x + ")") == "tensor f32 [1, 8, 30, 30]");
  CHECK_THAT(error_of("(poolmax 3 3 2 2 0 0 " + in("v", "8 32") + ")"), Catch::Contains("rank 4"));
  CHECK_THAT(error_of("(poolavg 0 3 2 2 0 0 " + x + ")"), Catch::Contains("must be positive"));
}

TEST_CASE("shape: concat, split and its outputs") {
  const std::string a = in("a", "2 3"), b = in("b", "2 5"), c = in("c", "4 3");
  CHECK(root_info("(concat 1 " + a + " " + b + ")") == "tensor f32 [2, 8]");
  CHECK(root_info("(concat 0 " + a + " " + c + " " + a + ")") == "tensor f32 [8, 3]");
  CHECK_THAT(error_of("(concat 0 " + a + " " + b + ")"), Catch::Contains("incompatible"));
  CHECK_THAT(error_of("(concat 2 " + a + " " + a + ")"), Catch::Contains("axis 2 out of range"));
  CHECK(root_info("(split 1 2 " + b + ")") == "pair f32 [2, 2] [2, 3]");
  CHECK(root_info("(split_1 (split 1 2 " + b + "))") == "tensor f32 [2, 3]");
  CHECK(root_info("(split_0 (split 1 2 " + b + "))") == "tensor f32 [2, 2]");
  CHECK_THAT(error_of("(split 1 5 " + b + ")"), Catch::Contains("size 5"));
  CHECK_THAT(error_of("(split_0 " + b + ")"), Catch::Contains("not a split"));
  CHECK_THAT(error_of("(concat 0 " + a + " " + in("h", "2 3", "f16") + ")"),
             Catch::Contains("dtypes differ"));
}

TEST_CASE("shape: transpose, reshape, broadcast, slice and pad") {
  const std::string x = in("x", "2 3 4");
  CHECK(root_info("(transpose (ints 2 0 1) " + x + ")") == "tensor f32 [4, 2, 3]");
  CHECK_THAT(error_of("(transpose (ints 0 0 1) " + x + ")"), Catch::Contains("not a permutation"));
  CHECK_THAT(error_of("(transpose (ints 1 0) " + x + ")"), Catch::Contains("does not fit rank 3"));
  CHECK(root_info("(reshape (ints 6 4) " + x + ")") == "tensor f32 [6, 4]");
  CHECK_THAT(error_of("(reshape (ints 5 4) " + x + ")"), Catch::Contains("24 elements"));
  CHECK(root_info("(broadcast (ints 5 2 3 4) " + in("y", "3 1") + ")") ==
        "tensor f32 [5, 2, 3, 4]");
  CHECK_THAT(error_of("(broadcast (ints 2 4) " + in("y", "3") + ")"),
             Catch::Contains("does not broadcast"));
  CHECK(root_info("(slice 2 1 3 " + x + ")") == "tensor f32 [2, 3, 2]");
  CHECK_THAT(error_of("(slice 2 3 3 " + x + ")"), Catch::Contains("non-empty range"));
  CHECK(root_info("(pad 0 1 2 " + x + ")") == "tensor f32 [5, 3, 4]");
  CHECK_THAT(error_of("(pad 0 -1 2 " + x + ")"), Catch::Contains("negative"));
}

TEST_CASE("shape: normalization, reductions and softmax") {
  const std::string x = in("x", "1 8 4 4"), p = wt("p", "8");
  CHECK(root_info("(batchnorm " + x + " " + p + " " + p + " " + p + " " + p + ")") ==
        "tensor f32 [1, 8, 4, 4]");
  CHECK_THAT(error_of("(batchnorm " + x + " " + p + " " + p + " " + p + " " + wt("q", "4") + ")"),
             Catch::Contains("want [8]"));
  const std::string t = in("t", "64 1024"), g = wt("g", "1024");
  CHECK(root_info("(layernorm " + t + " " + g + " " + g + ")") == "tensor f32 [64, 1024]");
  CHECK_THAT(error_of("(layernorm " + t + " " + p + " " + g + ")"), Catch::Contains("gamma [8]"));
  CHECK(root_info("(softmax 1 " + t + ")") == "tensor f32 [64, 1024]");
  CHECK_THAT(error_of("(softmax 2 " + t + ")"), Catch::Contains("out of range"));
  CHECK(root_info("(reduce_sum 1 " + t + ")") == "tensor f32 [64]");
  CHECK(root_info("(reduce_max 0 " + t + ")") == "tensor f32 [1024]");
  CHECK(root_info("(reduce_mean 0 (reduce_sum 1 " + t + "))") == "tensor f32 []");
  for (const char* op : {"reduce_sum", "reduce_max", "reduce_mean"}) {
    INFO(op);
    CHECK_THAT(error_of(std::string("(") + op + " 2 " + t + ")"), Catch::Contains("out of range"));
    CHECK_THAT(error_of(std::string("(") + op + " -1 " + t + ")"), Catch::Contains("out of range"));
    CHECK_THAT(error_of(std::string("(") + op + " 0 (reduce_sum 0 (reduce_sum 0 " + t + ")))"),
               Catch::Contains("out of range"));
    CHECK_THAT(error_of(std::string("(") + op + " (ints 0) " + t + ")"),
               Catch::Contains("not an integer"));
    CHECK_THAT(error_of(std::string("(") + op + " 0 3)"), Catch::Contains("not a tensor"));
  }
}

TEST_CASE("shape: operands of one operator must agree in dtype") {
  const std::string h = in("h", "4 4", "f16"), f = in("f", "4 4"), b = in("b", "4 4", "bf16");
  CHECK(root_info("(matmul 0 " + h + " " + in("g", "4 4", "f16") + ")") == "tensor f16 [4, 4]");
  CHECK_THAT(error_of("(matmul 0 " + h + " " + f + ")"),
             Catch::Contains("matmul: dtypes differ (f16 and f32)"));
  CHECK_THAT(error_of("(concat 0 " + b + " " + f + ")"),
             Catch::Contains("concat: dtypes differ (bf16 and f32)"));
  CHECK_THAT(error_of("(smul " + f + " " + in("s", "1", "f16") + ")"),
             Catch::Contains("smul: dtypes differ"));
  const std::string x = in("x", "1 4 8 8", "bf16"), w = wt("w", "8 4 3 3");
  CHECK_THAT(error_of("(conv2d 1 1 0 0 " + x + " " + w + ")"),
             Catch::Contains("conv2d: dtypes differ (bf16 and f32)"));
  const std::string p = wt("p", "4");
  CHECK_THAT(error_of("(batchnorm " + x + " " + p + " " + p + " " + p + " " + p + ")"),
             Catch::Contains("batchnorm: dtypes differ (bf16 and f32)"));
  const std::string t = in("t", "2 4", "f16");
  CHECK_THAT(error_of("(layernorm " + t + " " + p + " " + p + ")"),
             Catch::Contains("layernorm: dtypes differ (f16 and f32)"));
  CHECK(root_info("(layernorm " + t + " (weight g f16 (ints 4)) (weight e f16 (ints 4)))") ==
        "tensor f16 [2, 4]");
}

TEST_CASE("shape: enlarge, merge and noop") {
  CHECK(root_info("(enlarge " + wt("a", "8 4 1 1") + " " + wt("b", "8 4 3 3") + ")") ==
        "tensor f32 [8, 4, 3, 3]");
  CHECK_THAT(error_of("(enlarge " + wt("a", "8 4 3 3") + " " + wt("b", "8 4 4 4") + ")"),
             Catch::Contains("cannot be centred"));
  CHECK(root_info("(merge 4 2 " + wt("w", "16 2 3 3") + ")") == "tensor f32 [16, 4, 3, 3]");
  CHECK_THAT(error_of("(merge 3 2 " + wt("w", "16 2 3 3") + ")"), Catch::Contains("cannot merge"));
  CHECK(root_info("(noop " + in("a", "2") + " " + in("b", "3") + ")") == "outputs");
  CHECK_THAT(error_of("(noop " + in("a", "2") + " 3)"), Catch::Contains("not a tensor"));
  // Weight-only is tracked through ops: a concat of weights is precomputable.
  const auto infos =
      check_program(parse_program("(concat 0 " + wt("a", "2 2") + " " + wt("b", "2 2") + ")"));
  CHECK(infos.back().weight_only);
}

TEST_CASE("shape: wino_weight and wino_conv2d") {
  CHECK(root_info("(wino_weight " + wt("w", "8 4 3 3") + ")") == "tensor f32 [16, 8, 4]");
  CHECK_THAT(error_of("(wino_weight " + wt("w", "8 4 1 1") + ")"),
             Catch::Contains("is not [C_out, C_in, 3, 3]"));
  CHECK_THAT(error_of("(wino_weight " + wt("w", "8 4 3") + ")"),
             Catch::Contains("is not [C_out, C_in, 3, 3]"));
  const std::string u = "(wino_weight " + wt("w", "8 4 3 3") + ")";
  CHECK(root_info("(wino_conv2d 0 2 " + in("x", "2 4 7 5") + " " + u + ")") ==
        "tensor f32 [2, 8, 7, 5]");
  CHECK(root_info("(wino_conv2d 1 0 " + in("x", "1 4 7 5") + " " + u + ")") ==
        "tensor f32 [1, 8, 5, 3]");
  CHECK_THAT(error_of("(wino_conv2d 0 0 " + in("x", "1 3 7 5") + " " + u + ")"),
             Catch::Contains("differ from the weight's"));
  CHECK_THAT(error_of("(wino_conv2d 0 0 " + in("x", "1 4 7 5") + " " + wt("u", "15 8 4") + ")"),
             Catch::Contains("[16, C_out, C_in]"));
  CHECK_THAT(error_of("(wino_conv2d 1 0 " + in("x", "1 4 2 5") + " " + u + ")"),
             Catch::Contains("larger than input"));
  CHECK_THAT(error_of("(wino_conv2d 2 0 " + in("x", "1 4 7 5") + " " + u + ")"),
             Catch::Contains("neither 0 (same) nor 1"));
  CHECK_THAT(error_of("(wino_conv2d 0 5 " + in("x", "1 4 7 5") + " " + u + ")"),
             Catch::Contains("activation 5"));
  CHECK(check_program(parse_program(u)).back().weight_only);
}

TEST_CASE("shape: the ONNX extension: ewsub, ewdiv, ewpow, sqrt and clip") {
  const std::string a = in("a", "2 3"), b = in("b", "2 3"), c = in("c", "3 2"),
                    h = in("h", "2 3", "f16");
  for (const char* op : {"ewsub", "ewdiv", "ewpow"}) {
    CHECK(root_info(std::string("(") + op + " " + a + " " + b + ")") == "tensor f32 [2, 3]");
    CHECK_THAT(error_of(std::string("(") + op + " " + a + " " + c + ")"),
               Catch::Contains("shapes [2, 3] and [3, 2] differ"));
    CHECK_THAT(error_of(std::string("(") + op + " " + a + " " + h + ")"),
               Catch::Contains("dtypes differ"));
  }
  CHECK(root_info("(sqrt " + h + ")") == "tensor f16 [2, 3]");
  CHECK_THAT(error_of("(sqrt 3)"), Catch::Contains("not a tensor"));
  CHECK(root_info("(clip " + a + " " + wt("lo", "1") + " " + wt("hi", "") + ")") ==
        "tensor f32 [2, 3]");
  CHECK_THAT(error_of("(clip " + a + " " + wt("lo", "2") + " " + wt("hi", "1") + ")"),
             Catch::Contains("want one element"));
  CHECK_THAT(error_of("(clip " + a + " " + in("lo", "1", "f16") + " " + wt("hi", "1") + ")"),
             Catch::Contains("dtypes differ"));
  // Weight-only when every operand is.
  CHECK(check_program(parse_program("(clip " + wt("w", "4") + " " + wt("lo", "1") + " " +
                                    wt("hi", "1") + ")"))
            .back()
            .weight_only);
  CHECK_FALSE(
      check_program(parse_program("(clip " + a + " " + wt("lo", "1") + " " + wt("hi", "1") + ")"))
          .back()
          .weight_only);
}

TEST_CASE("shape: the ONNX extension: resize and conv_transpose") {
  const std::string x = in("x", "1 8 5 7");
  CHECK(root_info("(resize 0 1 1 (ints 1 8 10 14) " + x + ")") == "tensor f32 [1, 8, 10, 14]");
  CHECK(root_info("(resize 1 2 0 (ints 2 8 3 7) " + x + ")") == "tensor f32 [2, 8, 3, 7]");
  CHECK_THAT(error_of("(resize 2 0 0 (ints 1 8 10 14) " + x + ")"),
             Catch::Contains("interpolation 2"));
  CHECK_THAT(error_of("(resize 0 3 0 (ints 1 8 10 14) " + x + ")"),
             Catch::Contains("coordinate mode 3"));
  CHECK_THAT(error_of("(resize 0 0 4 (ints 1 8 10 14) " + x + ")"),
             Catch::Contains("nearest mode 4"));
  CHECK_THAT(error_of("(resize 0 0 0 (ints 8 10 14) " + x + ")"), Catch::Contains("rank"));
  CHECK_THAT(error_of("(resize 0 0 0 (ints 1 8 0 14) " + x + ")"), Catch::Contains("not positive"));
  // conv_transpose: out = (in - 1) * stride + k - pad_begin - pad_end; weight [C_in, C_out/g, kh,
  // kw].
  CHECK(root_info("(conv_transpose 2 2 0 0 0 0 1 " + x + " " + wt("w", "8 4 3 3") + ")") ==
        "tensor f32 [1, 4, 11, 15]");
  CHECK(root_info("(conv_transpose 2 2 1 1 1 1 1 " + x + " " + wt("w", "8 4 3 3") + ")") ==
        "tensor f32 [1, 4, 9, 13]");
  CHECK(root_info("(conv_transpose 2 2 1 1 0 0 2 " + x + " " + wt("w", "8 3 4 4") + ")") ==
        "tensor f32 [1, 6, 11, 15]");
  // A negative end pad (ONNX's output_padding) appends rows, by less than a stride.
  CHECK(root_info("(conv_transpose 2 3 1 1 -1 -2 1 " + x + " " + wt("w", "8 4 3 3") + ")") ==
        "tensor f32 [1, 4, 11, 22]");
  CHECK_THAT(error_of("(conv_transpose 2 2 0 0 -2 0 1 " + x + " " + wt("w", "8 4 3 3") + ")"),
             Catch::Contains("out of range"));
  CHECK_THAT(error_of("(conv_transpose 2 2 -1 0 0 0 1 " + x + " " + wt("w", "8 4 3 3") + ")"),
             Catch::Contains("out of range"));
  CHECK_THAT(error_of("(conv_transpose 2 2 0 0 0 0 1 " + x + " " + wt("w", "4 4 3 3") + ")"),
             Catch::Contains("does not fit"));
  CHECK_THAT(error_of("(conv_transpose 2 2 0 0 0 0 3 " + x + " " + wt("w", "8 4 3 3") + ")"),
             Catch::Contains("3 groups"));
  CHECK_THAT(error_of("(conv_transpose 0 2 0 0 0 0 1 " + x + " " + wt("w", "8 4 3 3") + ")"),
             Catch::Contains("must be positive"));
  CHECK_THAT(error_of("(conv_transpose 1 1 2 2 2 2 1 " + in("s", "1 8 1 1") + " " +
                      wt("w", "8 4 3 3") + ")"),
             Catch::Contains("empty output"));
  CHECK_THAT(error_of("(conv_transpose 1 1 0 0 0 0 1 " + in("v", "8 5 7") + " " +
                      wt("w", "8 4 3 3") + ")"),
             Catch::Contains("rank 4"));
}

TEST_CASE(
    "shape: the ONNX extension: opaque carries its type, dtype and shape, and is never "
    "weight-only") {
  CHECK(root_info("(opaque Sin f32 (ints 2 4) " + in("x", "2 4") + ")") == "tensor f32 [2, 4]");
  CHECK(root_info("(opaque NonMaxSuppression bf16 (ints 7) " + in("x", "2 4") + " " + in("y", "3") +
                  ")") == "tensor bf16 [7]");
  CHECK(root_info("(opaque RandomNormal f32 (ints 3 3))") == "tensor f32 [3, 3]");  // no operands
  CHECK_FALSE(check_program(parse_program("(opaque Sin f32 (ints 4) " + wt("w", "4") + ")"))
                  .back()
                  .weight_only);
  CHECK_THAT(error_of("(opaque 3 f32 (ints 2 4) " + in("x", "2 4") + ")"),
             Catch::Contains("not a name"));
  CHECK_THAT(error_of("(opaque Sin f64 (ints 2 4) " + in("x", "2 4") + ")"),
             Catch::Contains("unknown dtype"));
  CHECK_THAT(error_of("(opaque Sin f32 (ints 2 0) " + in("x", "2 4") + ")"),
             Catch::Contains("not positive"));
  CHECK_THAT(error_of("(opaque Sin f32 (ints 2 4) (ints 1 2))"), Catch::Contains("not a tensor"));
  CHECK_THAT(
      error_of("(fused (opaque Sin f32 (ints 4) (arg 0 f32 (ints 4))) " + in("x", "4") + ")"),
      Catch::Contains("never fuse"));
  // The builder refuses a type that would not read back.
  Graph g;
  const Tensor x = g.input("x", {2});
  CHECK(g.info(g.opaque("Sin", {2}, {x})).dims == Dims{2});
  CHECK_THROWS_AS(g.opaque("has space", {2}, {x}), ShapeError);
  CHECK_THROWS_AS(g.opaque("relu", {2}, {x}), ShapeError);
}

TEST_CASE("shape: the error names the offending node") {
  try {
    (void)parse_program("(relu (ewadd " + in("a", "2") + " " + in("b", "3") + "))");
    FAIL("expected a ShapeError");
  } catch (const ShapeError& e) {
    CHECK(e.op() == "ewadd");
    CHECK(std::string(e.what()).find("node ") == 0);
  }
}

TEST_CASE("text: malformed programs and unknown operators give a ParseError with the offset") {
  CHECK_THROWS_AS(parse_program("(relu (input x f32 (ints 2))"), ParseError);
  try {
    (void)parse_program("(frobnicate (input x f32 (ints 2)))");
    FAIL("expected a ParseError");
  } catch (const ParseError& e) {
    CHECK(e.offset() == 1);  // the operator atom
    CHECK_THAT(e.reason(), Catch::Contains("unknown tensor operator 'frobnicate'"));
  }
  CHECK_THROWS_AS(parse_program("(relu)"), ParseError);                             // wrong arity
  CHECK_THROWS_AS(parse_program("(concat 0 (input x f32 (ints 2)))"), ParseError);  // too few
}

TEST_CASE("builder: checks as it builds, shares identical nodes, prints and re-reads") {
  Graph g;
  const Tensor x = g.input("x", {1, 512});
  const Tensor w = g.weight("w", {512, 256});
  CHECK(g.input("x", {1, 512}) == x);  // the same declaration is the same node
  CHECK_THROWS_AS(g.input("x", {1, 256}), ShapeError);
  CHECK_THROWS_AS(g.matmul(w, x), ShapeError);
  CHECK_THROWS_AS(g.input("relu", {2}), ShapeError);
  CHECK_THROWS_AS(g.input("12", {2}), ShapeError);
  const Tensor y = g.relu(g.matmul(x, w));
  CHECK(g.relu(g.matmul(x, w)) == y);
  CHECK(g.shape(y) == Dims{1, 256});
  const Tensor b = g.weight("b", {256});
  const Tensor z = g.add(y, b);  // broadcast [256] to [1, 256]
  CHECK(g.shape(z) == Dims{1, 256});
  CHECK_THROWS_AS(g.add(y, g.weight("c", {3})), ShapeError);
  const auto [lo, hi] = g.split(z, 1, 100);
  CHECK(g.shape(lo) == Dims{1, 100});
  CHECK(g.shape(hi) == Dims{1, 156});
  CHECK_THROWS_AS(Graph().program(), Error);
  g.output(lo);
  g.output(hi);
  const RecExpr<TensorNode> program = g.program();
  CHECK(program[program.root()].op() == Op::Noop);
  CHECK(parse_program(program.to_string()).to_string() == program.to_string());
  const auto counts = op_histogram(program);
  CHECK(counts[static_cast<std::size_t>(Op::MatMul)] == 1);
  CHECK(counts[static_cast<std::size_t>(Op::Broadcast)] == 1);
  CHECK(count_ops(program) == 7);  // matmul relu broadcast ewadd split split_0 split_1
}

TEST_CASE("builder: add/mul/sub/div/pow broadcast both operands when both need it") {
  // Found by fuzzing the ONNX importer: broadcasting the first operand appends nodes, which
  // could move the builder's infos while the second operand's shape was still referenced
  // (a use after free under ASan). The graphs start with 0 to 63 filler nodes, so that in some
  // of them the infos' vector reallocates exactly while the first operand is broadcast.
  for (std::int64_t filler = 0; filler < 64; ++filler) {
    Graph g;
    for (std::int64_t i = 0; i < filler; ++i) (void)g.num(1000 + i);
    const Tensor a = g.input("a", {4, 1});
    const Tensor b = g.input("b", {1, 5});
    for (Tensor t : {g.add(a, b), g.mul(a, b), g.sub(b, a), g.div(a, b), g.pow(b, a)}) {
      CHECK(g.shape(t) == Dims{4, 5});
      g.output(t);
    }
    CHECK_NOTHROW(check_program(g.program()));
  }
}

TEST_CASE("builder: program() leaves out nodes no output needs") {
  Graph g;
  const Tensor x = g.input("x", {4});
  (void)g.tanh(x);  // dead
  g.output(g.relu(x));
  CHECK(count_ops(g.program()) == 1);
}

TEST_CASE("analysis: united classes must denote the same shape") {
  TensorEGraph egraph;
  const Id a = egraph.add_expr(parse_program(in("a", "2 3")));
  const Id b = egraph.add_expr(parse_program(in("b", "3 2")));
  CHECK_THROWS_AS(egraph.unite(a, b), Error);
}

TEST_CASE("analysis: united classes must denote the same layout") {
  TensorEGraph egraph;
  const Id a = egraph.add_expr(parse_program(in("a", "1 2 3 4")));
  const Id b =
      egraph.add_expr(parse_program("(relayout channels_last " + in("a", "1 2 3 4") + ")"));
  CHECK(egraph[a].data.dims == egraph[b].data.dims);
  CHECK_THROWS_AS(egraph.unite(a, b), Error);
}

TEST_CASE(
    "shape: physical layouts: channels_last sources, relayout, and the operators that read them") {
  const std::string x = in("x", "1 4 8 8"), c = "(input c f32 (ints 1 4 8 8) channels_last)";
  const std::string k = wt("k", "8 4 3 3"), p = wt("p", "4");
  // Sources and relayout: the logical shape stays, the layout is stored beside it.
  CHECK(root_info(c) == "tensor f32 [1, 4, 8, 8] channels_last");
  CHECK(root_info("(input c f32 (ints 1 4 8 8) contiguous)") == "tensor f32 [1, 4, 8, 8]");
  CHECK(root_info("(relayout channels_last " + x + ")") == "tensor f32 [1, 4, 8, 8] channels_last");
  CHECK(root_info("(relayout contiguous " + c + ")") == "tensor f32 [1, 4, 8, 8]");
  CHECK(check_program(parse_program(c)).back() != check_program(parse_program(x)).back());
  CHECK_THAT(error_of("(input c f32 (ints 4 8) channels_last)"),
             Catch::Contains("channels_last needs a rank-4 shape"));
  CHECK_THAT(error_of("(relayout nhwc " + x + ")"), Catch::Contains("not a layout"));
  CHECK_THAT(error_of("(relayout channels_last " + in("v", "8 8") + ")"),
             Catch::Contains("rank-4"));
  CHECK_THAT(error_of("(input c f32 (ints 1 4 8 8) 3)"), Catch::Contains("not a layout"));
  // Operators defined for any layout keep it.
  CHECK(root_info("(relu " + c + ")") == "tensor f32 [1, 4, 8, 8] channels_last");
  CHECK(root_info("(ewadd " + c + " " + c + ")") == "tensor f32 [1, 4, 8, 8] channels_last");
  CHECK(root_info("(conv2d 1 1 0 2 " + c + " " + k + ")") ==
        "tensor f32 [1, 8, 8, 8] channels_last");
  CHECK(root_info("(poolavg 2 2 2 2 1 0 " + c + ")") == "tensor f32 [1, 4, 4, 4] channels_last");
  CHECK(root_info("(batchnorm " + c + " " + p + " " + p + " " + p + " " + p + ")") ==
        "tensor f32 [1, 4, 8, 8] channels_last");
  CHECK(root_info("(concat 1 " + c + " " + c + ")") == "tensor f32 [1, 8, 8, 8] channels_last");
  CHECK(root_info("(split_1 (split 1 1 " + c + "))") == "tensor f32 [1, 3, 8, 8] channels_last");
  // Mixed layouts, and operators that read contiguous tensors only.
  CHECK_THAT(error_of("(ewadd " + c + " " + x + ")"),
             Catch::Contains("ewadd: layouts differ (channels_last and contiguous)"));
  CHECK_THAT(error_of("(concat 1 " + x + " " + c + ")"), Catch::Contains("concat: layouts differ"));
  CHECK_THAT(error_of("(transpose (ints 0 2 3 1) " + c + ")"),
             Catch::Contains("transpose: operand 1 is stored channels_last"));
  CHECK_THAT(error_of("(reshape (ints 256) " + c + ")"),
             Catch::Contains("relayout it to contiguous first"));
  CHECK_THAT(error_of("(matmul 0 " + c + " " + c + ")"),
             Catch::Contains("matmul: operand 1 is stored channels_last"));
  CHECK_THAT(error_of("(conv2d 1 1 0 0 " + x + " (weight k f32 (ints 8 4 3 3) channels_last))"),
             Catch::Contains("weights are contiguous"));
  // The builder: a broadcast operand follows the channels_last one.
  Graph g;
  const Tensor t = g.relayout(g.conv2d(g.input("x", {1, 4, 8, 8}), g.weight("k", {8, 4, 3, 3})),
                              Layout::ChannelsLast);
  const Tensor y = g.add(t, g.weight("bias", {8, 1, 1}));
  CHECK(describe(g.info(y)) == "tensor f32 [1, 8, 8, 8] channels_last");
  CHECK(describe(g.info(g.input("i", {1, 3, 4, 4}, DType::F32, Layout::ChannelsLast))) ==
        "tensor f32 [1, 3, 4, 4] channels_last");
  CHECK_THROWS_AS(g.input("j", {3, 4}, DType::F32, Layout::ChannelsLast), ShapeError);
}
