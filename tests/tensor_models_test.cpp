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
  CHECK(names == std::vector<std::string_view>{"bert", "nasrnn", "resnext50", "nasneta", "inceptionv3",
                                                "squeezenet", "vgg19"});
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
  CHECK_THROWS_WITH(models::build_model("vgg16"),
                    "unknown model 'vgg16' (valid names: bert, nasrnn, resnext50, nasneta, inceptionv3, "
                    "squeezenet, vgg19)");
}
