// The benchmark models of tensat/tensor/models.h: each builds, passes check_program, has the
// op histogram and output shape derived in the header, and stays within 15% of TENSAT's op
// counts; build_model knows exactly the listed names.
#include <catch2/catch.hpp>

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include <tensat/tensor/models.h>

using namespace tensat;
using namespace tensat::tensor;

namespace {

/// The non-zero entries of `op_histogram`, in `Op` order: "conv2d 26, relu 26, ...".
std::string histogram(const RecExpr<TensorNode>& program) {
  const auto counts = op_histogram(program);
  std::string out;
  for (std::size_t i = 0; i < counts.size(); ++i) {
    if (counts[i] == 0) continue;
    if (!out.empty()) out += ", ";
    out += fmt::format("{} {}", op_name(static_cast<Op>(i)), counts[i]);
  }
  return out;
}

struct Built {
  RecExpr<TensorNode> program;
  std::vector<TensorInfo> infos;  // from check_program
  [[nodiscard]] Dims output_shape() const { return infos.back().dims; }
};

Built build(std::string_view name) {
  const Graph g = models::build_model(name);
  Built b{g.program(), {}};
  b.infos = check_program(b.program);
  return b;
}

}  // namespace

TEST_CASE("models: BERT") {
  const Built m = build("bert");
  CHECK(histogram(m.program) == "relu 1, matmul 48, transpose 32, reshape 32");
  CHECK(count_ops(m.program) == 113);
  CHECK(m.output_shape() == Dims{64, 1024});
}

TEST_CASE("models: NasRNN") {
  const Built m = build("nasrnn");
  CHECK(histogram(m.program) == "ewadd 55, ewmul 20, relu 10, tanh 40, sigmoid 25, matmul 80");
  CHECK(count_ops(m.program) == 230);
  CHECK(m.output_shape() == Dims{1, 512});
}

TEST_CASE("models: ResNeXt-50") {
  const Built m = build("resnext50");
  // 1 stem conv + 16 blocks x 3 convs + 4 projections; one add and one relu per block.
  CHECK(histogram(m.program) == "ewadd 16, relu 16, conv2d 53, poolmax 1");
  CHECK(count_ops(m.program) == 86);
  CHECK(m.output_shape() == Dims{1, 2048, 7, 7});
}

TEST_CASE("models: NasNet-A") {
  const Built m = build("nasneta");
  // Per normal cell: 2 + 5 x 2 convs, 2 distinct avg pools, 5 adds, 1 concat; per reduction
  // cell: 12 convs, 1 distinct max pool, 2 avg pools, 5 adds, 1 concat; plus the stem.
  CHECK(histogram(m.program) == "ewadd 90, conv2d 217, poolmax 4, poolavg 36, concat 18");
  CHECK(count_ops(m.program) == 365);
  CHECK(m.output_shape() == Dims{1, 5120, 7, 7});
}

TEST_CASE("models: Inception-v3") {
  const Built m = build("inceptionv3");
  // TENSAT's graph: 94 conv, 5 max pools, 9 average pools, 30 concats; plus the classifier.
  CHECK(histogram(m.program) == "matmul 1, conv2d 94, poolmax 5, poolavg 9, concat 30, reshape 1");
  CHECK(m.output_shape() == Dims{1, 1000});
}

TEST_CASE("models: SqueezeNet") {
  const Built m = build("squeezenet");
  CHECK(histogram(m.program) == "relu 26, conv2d 26, poolmax 3, poolavg 1, concat 8, reshape 1");
  CHECK(m.output_shape() == Dims{1, 1000});
}

TEST_CASE("models: VGG-19") {
  const Built m = build("vgg19");
  CHECK(histogram(m.program) == "relu 18, matmul 3, conv2d 16, poolmax 5, reshape 1");
  CHECK(m.output_shape() == Dims{1, 1000});
}

TEST_CASE("models: op counts are within 15% of TENSAT's") {
  struct Target {
    std::string_view name;
    double ops;
  };
  for (const Target& t : {Target{"bert", 113}, Target{"nasrnn", 230}, Target{"resnext50", 86},
                          Target{"nasneta", 383}}) {
    INFO(t.name);
    const double ops = static_cast<double>(count_ops(build(t.name).program));
    CHECK(ops >= 0.85 * t.ops);
    CHECK(ops <= 1.15 * t.ops);
  }
}

TEST_CASE("models: build_model builds every listed model, deterministically") {
  const auto& names = models::model_names();
  CHECK(names == std::vector<std::string_view>{"bert", "nasrnn", "resnext50", "nasneta",
                                               "inceptionv3", "squeezenet", "vgg19"});
  for (std::string_view name : names) {
    INFO(name);
    const Graph g = models::build_model(name);
    CHECK(g.outputs().size() == 1);
    // Compared node by node: these programs are DAGs with much sharing, and their tree text
    // (`to_string`) grows exponentially with depth.
    CHECK(models::build_model(name).program() == g.program());
  }
  CHECK(models::build_model("vgg19").program() == models::vgg19().program());
  CHECK(models::build_model("bert").program() == models::bert().program());
}

TEST_CASE("models: build_model rejects an unknown name, listing the valid ones") {
  CHECK_THROWS_AS(models::build_model("resnet50"), Error);
  CHECK_THROWS_AS(models::build_model(""), Error);
  CHECK_THROWS_WITH(
      models::build_model("vgg16"),
      "unknown model 'vgg16' (valid names: bert, nasrnn, resnext50, nasneta, inceptionv3, "
      "squeezenet, vgg19, encoder, decoder, resnet)");
}

TEST_CASE("models: transformer stacks and ResNet at any depth (issue 30)") {
  const auto ops = [](const Graph& g) { return count_ops(g.program()); };
  const auto histogram = [](const Graph& g, Op op) {
    return op_histogram(g.program())[static_cast<std::size_t>(op)];
  };
  // 35 operators a layer for the encoder, 37 (and a final layernorm) for the decoder.
  CHECK(ops(models::transformer_encoder(1)) == 35);
  CHECK(ops(models::transformer_encoder(12)) == 12 * 35);
  CHECK(ops(models::transformer_decoder(12)) == 12 * 37 + 1);
  const Graph encoder = models::transformer_encoder(2);
  CHECK(histogram(encoder, Op::LayerNorm) == 4);
  CHECK(histogram(encoder, Op::Softmax) == 2);
  CHECK(histogram(encoder, Op::Gelu) == 2);
  CHECK(histogram(encoder, Op::MatMul) == 16);
  CHECK(encoder.shape(encoder.outputs()[0]) == Dims{128, 768});
  const Graph gpt = models::transformer_decoder(1, {32, 96, 3, 384});
  CHECK(gpt.shape(gpt.outputs()[0]) == Dims{32, 96});
  // ResNet-50: 16 bottleneck blocks (3, 4, 6, 3), 53 convolutions each with batch norm.
  const Graph r50 = models::resnet(50);
  CHECK(histogram(r50, Op::Conv2d) == 53);
  CHECK(histogram(r50, Op::BatchNorm) == 53);
  CHECK(histogram(r50, Op::EwAdd) == 16);
  CHECK(ops(r50) == 175);
  CHECK(r50.shape(r50.outputs()[0]) == Dims{1, 1000});
  CHECK(histogram(models::resnet(101), Op::EwAdd) == 33);  // 3, 4, 23, 3
  // build_model with a depth, and its errors.
  CHECK(models::build_model("encoder", 3).program() == models::transformer_encoder(3).program());
  CHECK(models::build_model("resnet").program() == r50.program());
  CHECK(models::build_model("bert", 2).program() == models::bert(2).program());
  CHECK_THROWS_AS(models::build_model("resnet", 34), Error);
  CHECK_THROWS_AS(models::build_model("encoder", 0), Error);
  CHECK_THROWS_WITH(
      models::build_model("vgg19", 3),
      "model 'vgg19' has a fixed depth (layers apply to bert, encoder, decoder, resnet)");
  CHECK_THROWS_WITH(models::build_model("alexnet", 3), Catch::Contains("unknown model 'alexnet'"));
  CHECK_THROWS_AS(models::transformer_encoder(2, {16, 30, 4, 64}),
                  Error);  // 4 heads do not divide 30
}
