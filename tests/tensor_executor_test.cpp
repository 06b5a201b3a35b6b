// The reference executor: each operator against small hand-computed or naively computed cases,
// f16/bf16 rounding, verify() on right and wrong programs, and numerical verification of every
// rule of the dialect on concrete instances (an unsound rule fails here).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include <tensat/tensor.h>
#include <tensat/exec/executor.h>
#include <tensat/testing/rule_instances.h>

using namespace tensat;
using namespace tensat::tensor;

namespace {

HostTensor seq(Dims dims, float start = 1, float step = 1) {
  HostTensor t(dims);
  for (std::size_t i = 0; i < t.data.size(); ++i) t.data[i] = start + step * static_cast<float>(i);
  return t;
}

HostTensor run1(const Graph& g, const Bindings& b) { return execute(g.program(), b).at(0); }

void require_close(const std::vector<float>& got, const std::vector<float>& want,
                   float tol = 1e-4f) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i);
    REQUIRE(got[i] == Approx(want[i]).margin(tol).epsilon(tol));
  }
}

/// A window's placement along one axis of extent `in` (TensorFlow SAME/VALID): the output extent
/// and the padding before the first element.
struct WindowAxis {
  std::int64_t out, pad;
  WindowAxis(std::int64_t in, std::int64_t k, std::int64_t s, bool same)
      : out(same ? (in + s - 1) / s : (in - k) / s + 1),
        pad(same ? std::max<std::int64_t>((out - 1) * s + k - in, 0) / 2 : 0) {}
};

/// A windowed kernel's geometry drawn at random (the depthwise convolution's and the pools'
/// randomized tests): n images of c channels of h x w (1-11), a kh x kw window (1 to
/// `max_window`, square or not, larger than the input only under SAME), strides 1-3 on each axis.
struct RandomWindow {
  std::int64_t n = 1, c = 1, h = 1, w = 1, kh = 1, kw = 1, sh = 1, sw = 1;
  bool same = true;

  RandomWindow(std::mt19937& gen, int max_images, int min_channels, int max_window) {
    const auto pick = [&](int lo, int hi) {
      return std::uniform_int_distribution<int>(lo, hi)(gen);
    };
    do {
      n = pick(1, max_images), c = pick(min_channels, 5), h = pick(1, 11), w = pick(1, 11);
      kh = pick(1, max_window), kw = pick(1, max_window), sh = pick(1, 3), sw = pick(1, 3);
      same = pick(0, 1) == 1;
    } while (!same && (kh > h || kw > w));  // VALID needs the window inside the input
  }
  [[nodiscard]] Padding padding() const { return same ? Padding::Same : Padding::Valid; }
  [[nodiscard]] std::string text() const {
    return fmt::format("x [{}, {}, {}, {}] window {}x{} strides {}, {} {}", n, c, h, w, kh, kw, sh,
                       sw, same ? "SAME" : "VALID");
  }
};

/// Naive direct convolution (TensorFlow SAME/VALID), groups from the shapes.
std::vector<float> naive_conv(const HostTensor& x, const HostTensor& w, int sh, int sw, bool same) {
  const auto N = x.dims[0], C = x.dims[1], H = x.dims[2], W = x.dims[3];
  const auto O = w.dims[0], Cg = w.dims[1], kh = w.dims[2], kw = w.dims[3];
  const auto G = C / Cg, Og = O / G;
  const WindowAxis rows(H, kh, sh, same), cols(W, kw, sw, same);
  const std::int64_t Ho = rows.out, Wo = cols.out, ph = rows.pad, pw = cols.pad;
  std::vector<float> out(static_cast<std::size_t>(N * O * Ho * Wo), 0.0f);
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t o = 0; o < O; ++o)
      for (std::int64_t i = 0; i < Ho; ++i)
        for (std::int64_t j = 0; j < Wo; ++j) {
          double acc = 0;
          const std::int64_t g = o / Og;
          for (std::int64_t c = 0; c < Cg; ++c)
            for (std::int64_t a = 0; a < kh; ++a)
              for (std::int64_t b = 0; b < kw; ++b) {
                const std::int64_t ih = i * sh - ph + a, iw = j * sw - pw + b;
                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                acc += x.data[static_cast<std::size_t>(((n * C + g * Cg + c) * H + ih) * W + iw)] *
                       w.data[static_cast<std::size_t>(((o * Cg + c) * kh + a) * kw + b)];
              }
          out[static_cast<std::size_t>(((n * O + o) * Ho + i) * Wo + j)] = static_cast<float>(acc);
        }
  return out;
}

/// The right-hand side after applying `rule` once to `lhs`: from the root class, each class's
/// newest member (highest node id) that keeps the term acyclic.
RecExpr<TensorNode> rhs_program(const TensorRewrite& rule, const RecExpr<TensorNode>& lhs) {
  TensorEGraph egraph;
  const Id root = egraph.add_expr(lhs);
  egraph.rebuild();
  (void)rule.apply(egraph, rule.search(egraph));
  egraph.rebuild();
  RecExpr<TensorNode> out;
  std::map<Id, Id> done;
  std::set<Id> on_stack;
  std::function<std::optional<Id>(Id)> build = [&](Id cls) -> std::optional<Id> {
    cls = egraph.find(cls);
    if (auto it = done.find(cls); it != done.end()) return it->second;
    if (on_stack.count(cls)) return std::nullopt;
    on_stack.insert(cls);
    std::vector<Id> members(egraph[cls].nodes.begin(), egraph[cls].nodes.end());
    std::sort(members.begin(), members.end(), [](Id a, Id b) { return b < a; });
    std::optional<Id> result;
    for (Id nid : members) {
      const TensorNode& node = egraph.node(nid);
      std::vector<Id> kids;
      bool ok = true;
      for (Id c : node.children()) {
        auto k = build(c);
        if (!k) {
          ok = false;
          break;
        }
        kids.push_back(*k);
      }
      if (!ok) continue;
      TensorNode copy = node;
      for (std::size_t i = 0; i < kids.size(); ++i) copy.children()[i] = kids[i];
      result = out.add(copy);
      break;
    }
    on_stack.erase(cls);
    if (result) done.emplace(cls, *result);
    return result;
  };
  REQUIRE(build(root));
  return out;
}

}  // namespace

TEST_CASE("executor: matmul 2x3 by 3x2, batched, with activation") {
  Graph g;
  auto a = g.input("a", {2, 3});
  auto b = g.weight("b", {3, 2});
  g.output(g.matmul(a, b));
  Bindings in{{"a", seq({2, 3})}, {"b", seq({3, 2})}};
  // [[1 2 3][4 5 6]] x [[1 2][3 4][5 6]] = [[22 28][49 64]]
  require_close(run1(g, in).data, {22, 28, 49, 64});

  Graph gb;
  auto x = gb.input("x", {2, 1, 2});
  auto y = gb.input("y", {2, 2, 1});
  gb.output(gb.matmul(x, y, Activation::Relu));
  Bindings bb{{"x", HostTensor({2, 1, 2}, {1, 2, 3, 4})},
              {"y", HostTensor({2, 2, 1}, {1, 1, -1, -1})}};
  const HostTensor r = run1(gb, bb);
  CHECK(r.dims == Dims{2, 1, 1});
  require_close(r.data, {3, 0});  // 1+2 = 3; relu(-7) = 0
}

TEST_CASE("executor: conv2d SAME and VALID, stride 2, groups 2 against a direct loop") {
  for (bool same : {true, false})
    for (int stride : {1, 2})
      for (std::int64_t cg : {4, 2}) {  // groups 1 and 2
        Graph g;
        auto x = g.input("x", {2, 4, 7, 6});
        auto w = g.weight("w", {6, cg, 3, 3});
        g.output(g.conv2d(x, w, stride, stride, same ? Padding::Same : Padding::Valid));
        const Bindings b = random_bindings(g.program(), 7);
        const HostTensor r = run1(g, b);
        INFO("same " << same << " stride " << stride << " cg " << cg);
        require_close(r.data, naive_conv(b.at("x"), b.at("w"), stride, stride, same));
      }
  // The three lowerings against the same loop: depthwise (computed directly over stride-phase
  // planes: strides 1, 2 and 3, unequal strides, 5x5, 7x7, 3x1, 1x5 and 1x1 kernels, a kernel
  // larger than the input, one as large (VALID: one output), tap counts 0, 1 and 2 modulo 3, two
  // and three outputs per input channel),
  // im2col in several column blocks (K = 576 rows: 455 columns per block, 1600 positions), and a
  // 1x1 convolution in several column blocks (300 output rows: 873 columns per block).
  struct Shape {
    Dims x, w;
    std::int64_t sh, sw;
    bool same;
  };
  for (const Shape& c : {Shape{{2, 6, 11, 9}, {6, 1, 5, 5}, 1, 1, true},
                         Shape{{1, 6, 11, 9}, {6, 1, 3, 1}, 2, 2, false},
                         Shape{{1, 5, 15, 14}, {5, 1, 7, 7}, 2, 2, true},
                         Shape{{1, 4, 10, 13}, {4, 1, 3, 5}, 1, 3, true},
                         Shape{{2, 3, 4, 5}, {6, 1, 7, 7}, 2, 1, true},
                         Shape{{1, 4, 9, 8}, {12, 1, 1, 1}, 3, 3, false},
                         Shape{{1, 4, 12, 11}, {8, 1, 2, 2}, 2, 2, false},
                         Shape{{1, 3, 6, 9}, {6, 1, 1, 5}, 1, 2, true},
                         Shape{{2, 2, 5, 5}, {2, 1, 5, 5}, 1, 1, false},
                         Shape{{1, 64, 40, 40}, {8, 64, 3, 3}, 1, 1, true},
                         Shape{{1, 16, 40, 40}, {300, 16, 1, 1}, 1, 1, true}}) {
    Graph g;
    g.output(g.conv2d(g.input("x", c.x), g.weight("w", c.w), c.sh, c.sw,
                      c.same ? Padding::Same : Padding::Valid));
    const Bindings b = random_bindings(g.program(), 3);
    INFO("x " << dims_to_string(c.x) << " w " << dims_to_string(c.w) << " strides " << c.sh << ", "
              << c.sw << (c.same ? " SAME" : " VALID"));
    require_close(run1(g, b).data, naive_conv(b.at("x"), b.at("w"), static_cast<int>(c.sh),
                                              static_cast<int>(c.sw), c.same));
  }
  // Hand-computed: 1x1x3x3 ones with a 3x3 ones kernel, SAME stride 2: output 2x2 of window sums.
  Graph g;
  auto x = g.input("x", {1, 1, 3, 3});
  auto w = g.weight("w", {1, 1, 3, 3});
  g.output(g.conv2d(x, w, 2, 2, Padding::Same));
  HostTensor ones({1, 1, 3, 3});
  std::fill(ones.data.begin(), ones.data.end(), 1.0f);
  require_close(run1(g, {{"x", ones}, {"w", ones}}).data, {4, 4, 4, 4});
}

TEST_CASE("executor: depthwise convolutions of random geometry against a direct loop") {
  // The stride-phase planes over every geometry a small search reaches: sizes 1-11, kernels 1-7
  // (square or not, larger than the input under SAME), strides 1-3 on each axis, SAME and VALID,
  // one to three outputs per channel, one or two images.
  std::mt19937 gen(2026);
  for (int checked = 0; checked < 300; ++checked) {
    const RandomWindow r(gen, 2, 2, 7);
    const auto multiplier = std::uniform_int_distribution<std::int64_t>(1, 3)(gen);
    Graph g;
    g.output(g.conv2d(g.input("x", {r.n, r.c, r.h, r.w}),
                      g.weight("w", {r.c * multiplier, 1, r.kh, r.kw}), r.sh, r.sw, r.padding()));
    const Bindings b = random_bindings(g.program(), static_cast<std::uint64_t>(checked));
    INFO(r.text() << ", " << multiplier << " outputs per channel");
    require_close(run1(g, b).data, naive_conv(b.at("x"), b.at("w"), static_cast<int>(r.sh),
                                              static_cast<int>(r.sw), r.same));
  }
}

TEST_CASE("executor: pooling") {
  Graph g;
  auto x = g.input("x", {1, 1, 4, 4});
  g.output(g.poolmax(x, 2, 2, 2, 2, Padding::Valid));
  g.output(g.poolavg(x, 2, 2, 2, 2, Padding::Valid));
  g.output(g.poolavg(x, 3, 3, 1, 1, Padding::Same));  // corners average 4 values
  g.output(g.poolmax(x, 2, 2, 2, 2, Padding::Valid, Activation::Sigmoid));
  const auto r = execute(g.program(), {{"x", seq({1, 1, 4, 4})}});
  require_close(r[0].data, {6, 8, 14, 16});
  require_close(r[1].data, {3.5, 5.5, 11.5, 13.5});
  CHECK(r[2].data[0] == Approx((1 + 2 + 5 + 6) / 4.0));
  CHECK(r[2].data[5] == Approx((1 + 2 + 3 + 5 + 6 + 7 + 9 + 10 + 11) / 9.0));
  CHECK(r[3].data[0] == Approx(1 / (1 + std::exp(-6.0))));
}

namespace {

/// Naive pooling (TensorFlow SAME/VALID): each output element from its own window, padding
/// positions excluded from the window and from poolavg's divisor.
std::vector<float> naive_pool(const HostTensor& x, bool is_max, std::int64_t kh, std::int64_t kw,
                              std::int64_t sh, std::int64_t sw, bool same) {
  const auto NC = x.dims[0] * x.dims[1], H = x.dims[2], W = x.dims[3];
  const WindowAxis rows(H, kh, sh, same), cols(W, kw, sw, same);
  const std::int64_t Ho = rows.out, Wo = cols.out, ph = rows.pad, pw = cols.pad;
  std::vector<float> out;
  for (std::int64_t nc = 0; nc < NC; ++nc)
    for (std::int64_t i = 0; i < Ho; ++i)
      for (std::int64_t j = 0; j < Wo; ++j) {
        double acc = is_max ? -std::numeric_limits<double>::infinity() : 0.0;
        int taps = 0;
        for (std::int64_t a = 0; a < kh; ++a)
          for (std::int64_t b = 0; b < kw; ++b) {
            const std::int64_t ih = i * sh - ph + a, iw = j * sw - pw + b;
            if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
            const double v = x.data[static_cast<std::size_t>((nc * H + ih) * W + iw)];
            acc = is_max ? std::max(acc, v) : acc + v;
            ++taps;
          }
        out.push_back(static_cast<float>(is_max ? acc : acc / taps));
      }
  return out;
}

}  // namespace

TEST_CASE("executor: pooling against a direct loop, every window shape and edge") {
  // Window widths 1 to 5 (3 has its own path), strides 1 to 3, SAME and VALID, rows and columns
  // narrower and wider than the window: the separable kernel's edge and interior cases.
  for (bool is_max : {true, false})
    for (bool same : {true, false})
      for (std::int64_t k : {1, 2, 3, 5})
        for (std::int64_t s : {1, 2, 3})
          for (Dims dims :
               {Dims{1, 1, 1, 1}, Dims{1, 2, 3, 2}, Dims{2, 3, 7, 9}, Dims{1, 2, 13, 5}}) {
            const std::int64_t kh = k, kw = k == 1 ? 3 : k;  // also an unequal window
            if (!same && (dims[2] < kh || dims[3] < kw)) continue;
            Graph g;
            auto x = g.input("x", dims);
            g.output(is_max ? g.poolmax(x, kh, kw, s, s, same ? Padding::Same : Padding::Valid)
                            : g.poolavg(x, kh, kw, s, s, same ? Padding::Same : Padding::Valid));
            const Bindings b = random_bindings(g.program(), 11);
            INFO((is_max ? "poolmax " : "poolavg ")
                 << dims_to_string(dims) << " window " << kh << "x" << kw << " stride " << s
                 << (same ? " SAME" : " VALID"));
            require_close(run1(g, b).data, naive_pool(b.at("x"), is_max, kh, kw, s, s, same));
          }
  // Global pools (one window per plane, their own path): VALID, and SAME with a window one wider
  // than the plane and strides as large (one output, the padding after it).
  for (bool is_max : {true, false})
    for (bool same : {false, true}) {
      Graph g;
      auto x = g.input("x", {2, 3, 5, 4});
      const std::int64_t kh = same ? 6 : 5, kw = same ? 5 : 4, sh = same ? 5 : 1, sw = same ? 4 : 1;
      g.output(is_max ? g.poolmax(x, kh, kw, sh, sw, same ? Padding::Same : Padding::Valid)
                      : g.poolavg(x, kh, kw, sh, sw, same ? Padding::Same : Padding::Valid));
      const Bindings b = random_bindings(g.program(), 5);
      INFO((is_max ? "poolmax" : "poolavg") << (same ? " SAME" : " VALID"));
      require_close(run1(g, b).data, naive_pool(b.at("x"), is_max, kh, kw, sh, sw, same));
    }
  // A max pool passes over NaNs (std::max keeps the running maximum), on every path: 3-wide
  // windows, the general one, a global pool, and a plane of NaNs (-inf).
  for (std::int64_t k : {3, 2, 5})
    for (std::int64_t s : {1, 2}) {
      Graph g;
      auto x = g.input("x", {1, 2, 5, 5});
      g.output(g.poolmax(x, k, k, s, s, Padding::Same));
      Bindings b = random_bindings(g.program(), 9);
      for (std::size_t i = 0; i < 25; i += 3)
        b.at("x").data[i] = std::numeric_limits<float>::quiet_NaN();
      INFO("poolmax " << k << "x" << k << " stride " << s << " with NaNs");
      require_close(run1(g, b).data, naive_pool(b.at("x"), true, k, k, s, s, true));
    }
  Graph g;
  auto x = g.input("x", {1, 2, 3, 3});
  g.output(g.poolmax(x, 3, 3, 1, 1, Padding::Valid));
  HostTensor nans({1, 2, 3, 3});
  std::fill(nans.data.begin(), nans.data.begin() + 9, std::numeric_limits<float>::quiet_NaN());
  for (std::size_t i = 9; i < 18; ++i) nans.data[i] = -static_cast<float>(i);
  nans.data[13] = std::numeric_limits<float>::quiet_NaN();
  const HostTensor r = run1(g, {{"x", nans}});
  CHECK(r.data[0] == -std::numeric_limits<float>::infinity());
  CHECK(r.data[1] == -9.0f);
}

TEST_CASE("executor: pools of random geometry against a direct loop") {
  // The flat passes over all rows and all planes (unit strides) and the per-row ones (larger
  // strides) over what a small search reaches: one to three images of one to five channels,
  // sizes 1-11, windows 1-6 (square or not, wider than the input under SAME), strides 1-3 on
  // each axis, SAME and VALID. A window that reads across a row or plane boundary fails it.
  std::mt19937 gen(1127);
  for (int checked = 0; checked < 400; ++checked) {
    const RandomWindow r(gen, 3, 1, 6);
    const bool is_max = checked % 2 == 0;
    Graph g;
    auto x = g.input("x", {r.n, r.c, r.h, r.w});
    g.output(is_max ? g.poolmax(x, r.kh, r.kw, r.sh, r.sw, r.padding())
                    : g.poolavg(x, r.kh, r.kw, r.sh, r.sw, r.padding()));
    const Bindings b = random_bindings(g.program(), static_cast<std::uint64_t>(checked));
    INFO((is_max ? "poolmax " : "poolavg ") << r.text());
    require_close(run1(g, b).data, naive_pool(b.at("x"), is_max, r.kh, r.kw, r.sh, r.sw, r.same));
  }
}

TEST_CASE("executor: concat, split, slice, pad") {
  Graph g;
  auto a = g.input("a", {2, 2});
  auto b = g.input("b", {2, 1});
  auto c = g.concat(1, {a, b});
  auto [s0, s1] = g.split(c, 1, 1);
  g.output(c);
  g.output(s0);
  g.output(s1);
  g.output(g.slice(c, 0, 1, 2));
  g.output(g.pad(b, 0, 1, 0));
  const auto r = execute(g.program(), {{"a", seq({2, 2})}, {"b", seq({2, 1}, 10)}});
  require_close(r[0].data, {1, 2, 10, 3, 4, 11});
  require_close(r[1].data, {1, 3});
  require_close(r[2].data, {2, 10, 4, 11});
  require_close(r[3].data, {3, 4, 11});
  require_close(r[4].data, {0, 10, 11});
}

TEST_CASE("executor: transpose, reshape, broadcast, reduce") {
  Graph g;
  auto x = g.input("x", {2, 3});
  g.output(g.transpose(x, {1, 0}));
  g.output(g.reshape(x, {3, 2}));
  g.output(g.broadcast(g.input("v", {3}), {2, 3}));
  g.output(g.broadcast(g.input("c", {2, 1}), {2, 3}));
  g.output(g.reduce_sum(x, 0));
  g.output(g.reduce_max(x, 1));
  g.output(g.reduce_mean(x, 1));
  auto y = g.input("y", {2, 3, 4});
  g.output(g.transpose(y, {2, 0, 1}));
  const auto r = execute(
      g.program(),
      {{"x", seq({2, 3})}, {"v", seq({3})}, {"c", seq({2, 1}, 5)}, {"y", seq({2, 3, 4}, 0)}});
  require_close(r[0].data, {1, 4, 2, 5, 3, 6});
  CHECK(r[1].dims == Dims{3, 2});
  require_close(r[1].data, {1, 2, 3, 4, 5, 6});
  require_close(r[2].data, {1, 2, 3, 1, 2, 3});
  require_close(r[3].data, {5, 5, 5, 6, 6, 6});
  require_close(r[4].data, {5, 7, 9});
  require_close(r[5].data, {3, 6});
  require_close(r[6].data, {2, 5});
  CHECK(r[7].dims == Dims{4, 2, 3});
  // out[k][i][j] = y[i][j][k] = 12 i + 4 j + k
  for (int k = 0; k < 4; ++k)
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 3; ++j)
        CHECK(r[7].data[static_cast<std::size_t>(k * 6 + i * 3 + j)] == 12 * i + 4 * j + k);
}

TEST_CASE("executor: softmax, layernorm, batchnorm, elementwise") {
  Graph g;
  auto x = g.input("x", {2, 3, 2});
  g.output(g.softmax(x, 1));
  g.output(g.layernorm(x, g.weight("gamma", {2}), g.weight("beta", {2})));
  auto img = g.input("img", {1, 2, 2, 2});
  g.output(g.batchnorm(img, g.weight("s", {2}), g.weight("b", {2}), g.weight("m", {2}),
                       g.weight("var", {2})));
  g.output(g.gelu(x));
  g.output(g.smul(x, g.weight("k", {1})));
  const Bindings b = random_bindings(g.program(), 3);
  CHECK(b.at("var").data[0] > 0);
  CHECK(b.at("var").data[1] > 0);
  const auto r = execute(g.program(), b);
  for (int o = 0; o < 2; ++o)
    for (int i = 0; i < 2; ++i) {
      float sum = 0;
      for (int e = 0; e < 3; ++e) sum += r[0].data[static_cast<std::size_t>(o * 6 + e * 2 + i)];
      CHECK(sum == Approx(1.0f));
    }
  // layernorm with gamma 1, beta 0: each row has mean 0.
  Graph ln;
  auto y = ln.input("y", {3, 5});
  ln.output(ln.layernorm(y, ln.weight("one", {5}), ln.weight("zero", {5})));
  Bindings lb = random_bindings(ln.program(), 5);
  std::fill(lb["one"].data.begin(), lb["one"].data.end(), 1.0f);
  std::fill(lb["zero"].data.begin(), lb["zero"].data.end(), 0.0f);
  const HostTensor l = run1(ln, lb);
  for (int row = 0; row < 3; ++row) {
    double mean = 0, sq = 0;
    for (int k = 0; k < 5; ++k) mean += l.data[static_cast<std::size_t>(row * 5 + k)];
    for (int k = 0; k < 5; ++k) sq += std::pow(l.data[static_cast<std::size_t>(row * 5 + k)], 2);
    CHECK(mean / 5 == Approx(0).margin(1e-6));
    CHECK(sq / 5 == Approx(1).epsilon(1e-3));
  }
  // batchnorm formula per channel.
  const auto& im = b.at("img");
  for (std::size_t i = 0; i < 8; ++i) {
    const std::size_t c = i / 4;
    const float want = b.at("s").data[c] * (im.data[i] - b.at("m").data[c]) /
                           std::sqrt(b.at("var").data[c] + 1e-5f) +
                       b.at("b").data[c];
    CHECK(r[2].data[i] == Approx(want));
  }
  const float x0 = b.at("x").data[0];
  CHECK(r[3].data[0] ==
        Approx(0.5 * x0 * (1 + std::tanh(std::sqrt(2 / M_PI) * (x0 + 0.044715 * x0 * x0 * x0)))));
  CHECK(r[4].data[0] == Approx(x0 * b.at("k").data[0]));
}

TEST_CASE("executor: ewsub, ewdiv, ewpow, sqrt, clip and erf element by element") {
  Graph g;
  auto a = g.input("a", {2, 3});
  auto b = g.input("b", {2, 3});
  g.output(g.ewsub(a, b));
  g.output(g.ewdiv(a, b));
  g.output(g.ewpow(a, b));
  g.output(g.sqrt(a));
  g.output(g.clip(g.ewsub(a, b), g.weight("lo", {1}), g.weight("hi", {1})));
  g.output(g.clip(a, g.weight("hi", {1}), g.weight("lo", {1})));  // lo > hi: every element is hi
  g.output(g.erf(g.ewsub(a, b)));
  const Bindings in{{"a", HostTensor({2, 3}, {0.5f, 1, 2, 4, 9, 0.25f})},
                    {"b", HostTensor({2, 3}, {2, -1, 3, 0.5f, 2, 1})},
                    {"lo", HostTensor({1}, {-0.5f})},
                    {"hi", HostTensor({1}, {1.5f})}};
  const auto r = execute(g.program(), in);
  const auto& av = in.at("a").data;
  const auto& bv = in.at("b").data;
  for (std::size_t i = 0; i < 6; ++i) {
    INFO("element " << i);
    CHECK(r[0].data[i] == av[i] - bv[i]);
    CHECK(r[1].data[i] == av[i] / bv[i]);
    CHECK(r[2].data[i] ==
          Approx(std::pow(static_cast<double>(av[i]), static_cast<double>(bv[i]))).epsilon(1e-6));
    CHECK(r[3].data[i] == std::sqrt(av[i]));
    CHECK(r[4].data[i] == std::min(std::max(av[i] - bv[i], -0.5f), 1.5f));
    CHECK(r[5].data[i] == -0.5f);
    CHECK(r[6].data[i] ==
          Approx(std::erf(static_cast<double>(av[i] - bv[i]))).epsilon(1e-6).margin(1e-7));
  }
  require_close(r[4].data, {-0.5f, 1.5f, -0.5f, 1.5f, 1.5f, -0.5f});
  // erf of a - b = -1.5, 2, -1, 3.5, 7, -0.75 from a table (Abramowitz & Stegun 7.1).
  require_close(r[6].data, {-0.9661051f, 0.9953223f, -0.8427008f, 0.9999993f, 1.0f, -0.7111556f},
                1e-6f);

  // An exponent of 2 throughout (the vectorized square) gives what powf gives, bit for bit,
  // negative bases, zeros, infinities and NaN included.
  Graph sq;
  sq.output(sq.ewpow(sq.input("a", {2, 4}), sq.broadcast(sq.weight("two", {1}), {2, 4})));
  const float inf = std::numeric_limits<float>::infinity(),
              nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> bases{-3.5f, 0.0f, -0.0f, 1e-30f, 3e19f, -inf, nan, 7.25f};
  const auto squared =
      execute(sq.program(), {{"a", HostTensor({2, 4}, bases)}, {"two", HostTensor({1}, {2.0f})}});
  for (std::size_t i = 0; i < bases.size(); ++i) {
    INFO("base " << bases[i]);
    const float want = std::pow(bases[i], 2.0f);
    if (std::isnan(want))
      CHECK(std::isnan(squared[0].data[i]));
    else
      CHECK(squared[0].data[i] == want);
  }
}

namespace {

/// Naive transposed convolution as a gather: out[n, o, y, x] sums x[n, c, i, j] · w[c, o mod
/// C_out/g, a, b] over the input pixels with i·sh + a = y + pt and j·sw + b = x + pl.
std::vector<float> naive_conv_transpose(const HostTensor& x, const HostTensor& w, std::int64_t sh,
                                        std::int64_t sw, std::int64_t pt, std::int64_t pl,
                                        std::int64_t pb, std::int64_t pr, std::int64_t groups) {
  const auto N = x.dims[0], C = x.dims[1], H = x.dims[2], W = x.dims[3];
  const auto Og = w.dims[1], kh = w.dims[2], kw = w.dims[3], Cg = C / groups, O = Og * groups;
  const std::int64_t Ho = (H - 1) * sh + kh - pt - pb, Wo = (W - 1) * sw + kw - pl - pr;
  std::vector<float> out(static_cast<std::size_t>(N * O * Ho * Wo), 0.0f);
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t o = 0; o < O; ++o)
      for (std::int64_t y = 0; y < Ho; ++y)
        for (std::int64_t xo = 0; xo < Wo; ++xo) {
          double acc = 0;
          const std::int64_t g = o / Og;
          for (std::int64_t c = g * Cg; c < (g + 1) * Cg; ++c)
            for (std::int64_t i = 0; i < H; ++i)
              for (std::int64_t j = 0; j < W; ++j) {
                const std::int64_t a = y + pt - i * sh, b = xo + pl - j * sw;
                if (a < 0 || a >= kh || b < 0 || b >= kw) continue;
                acc += static_cast<double>(
                           x.data[static_cast<std::size_t>(((n * C + c) * H + i) * W + j)]) *
                       w.data[static_cast<std::size_t>(((c * Og + o % Og) * kh + a) * kw + b)];
              }
          out[static_cast<std::size_t>(((n * O + o) * Ho + y) * Wo + xo)] = static_cast<float>(acc);
        }
  return out;
}

}  // namespace

TEST_CASE(
    "executor: conv_transpose against a direct gather, with strides, pads, output padding and "
    "groups") {
  struct Case {
    std::int64_t sh, sw, pt, pl, pb, pr, groups, c_in, c_out_g, k;
  };
  for (const Case& c : {Case{1, 1, 0, 0, 0, 0, 1, 3, 2, 3}, Case{2, 2, 0, 0, 0, 0, 1, 4, 3, 3},
                        Case{2, 2, 1, 1, 1, 1, 1, 4, 3, 4}, Case{2, 3, 1, 0, -1, -2, 1, 2, 2, 3},
                        Case{2, 2, 1, 1, 0, 0, 2, 4, 3, 3}, Case{3, 1, 2, 0, 1, 0, 4, 8, 1, 5}}) {
    Graph g;
    auto x = g.input("x", {2, c.c_in, 5, 4});
    auto w = g.weight("w", {c.c_in, c.c_out_g, c.k, c.k});
    g.output(g.conv_transpose(x, w, c.sh, c.sw, {c.pt, c.pl, c.pb, c.pr}, c.groups));
    const Bindings b = random_bindings(g.program(), 11);
    const HostTensor r = run1(g, b);
    INFO("strides " << c.sh << "x" << c.sw << " pads " << c.pt << " " << c.pl << " " << c.pb << " "
                    << c.pr << " groups " << c.groups);
    require_close(r.data, naive_conv_transpose(b.at("x"), b.at("w"), c.sh, c.sw, c.pt, c.pl, c.pb,
                                               c.pr, c.groups));
  }
  // Hand-computed: a 2x2 input of ones, a 2x2 kernel of ones, stride 1: the counts of overlaps.
  Graph g;
  g.output(g.conv_transpose(g.input("x", {1, 1, 2, 2}), g.weight("w", {1, 1, 2, 2}), 1, 1));
  HostTensor ones({1, 1, 2, 2}, {1, 1, 1, 1});
  require_close(run1(g, {{"x", ones}, {"w", ones}}).data, {1, 2, 1, 2, 4, 2, 1, 2, 1});
}

TEST_CASE("executor: resize, nearest and linear, against ONNX's formulas") {
  const HostTensor x({1, 1, 2, 3}, {1, 2, 3, 4, 5, 6});
  const auto run_resize = [&](const Dims& dims, ResizeInterp interp, ResizeCoord coord,
                              ResizeNearest nearest) {
    Graph g;
    g.output(g.resize(g.input("x", {1, 1, 2, 3}), dims, interp, coord, nearest));
    return run1(g, {{"x", x}});
  };
  // Nearest, asymmetric, floor (PyTorch's nearest upsampling): every value repeated twice.
  require_close(
      run_resize({1, 1, 4, 6}, ResizeInterp::Nearest, ResizeCoord::Asymmetric, ResizeNearest::Floor)
          .data,
      {1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 4, 4, 5, 5, 6, 6});
  // Nearest, half_pixel, round_prefer_floor (ONNX's default), downsampling 3 -> 2 columns:
  // coordinates (0 + 0.5) * 1.5 - 0.5 = 0.25 -> 0 and 1.75 -> 2.
  require_close(run_resize({1, 1, 2, 2}, ResizeInterp::Nearest, ResizeCoord::HalfPixel,
                           ResizeNearest::RoundPreferFloor)
                    .data,
                {1, 3, 4, 6});
  // round_prefer_floor against round_prefer_ceil on an exact half: 3 -> 6 columns, asymmetric:
  // output 1 reads coordinate 0.5.
  const HostTensor floor_half =
      run_resize({1, 1, 2, 6}, ResizeInterp::Nearest, ResizeCoord::Asymmetric,
                 ResizeNearest::RoundPreferFloor);
  const HostTensor ceil_half = run_resize({1, 1, 2, 6}, ResizeInterp::Nearest,
                                          ResizeCoord::Asymmetric, ResizeNearest::RoundPreferCeil);
  CHECK(floor_half.data[1] == 1);
  CHECK(ceil_half.data[1] == 2);
  require_close(
      run_resize({1, 1, 2, 6}, ResizeInterp::Nearest, ResizeCoord::Asymmetric, ResizeNearest::Ceil)
          .data,
      {1, 2, 2, 3, 3, 3, 4, 5, 5, 6, 6, 6});
  // Linear, align_corners, 3 -> 5 columns: midpoints between neighbours.
  require_close(run_resize({1, 1, 2, 5}, ResizeInterp::Linear, ResizeCoord::AlignCorners,
                           ResizeNearest::RoundPreferFloor)
                    .data,
                {1, 1.5f, 2, 2.5f, 3, 4, 4.5f, 5, 5.5f, 6});
  // Linear, half_pixel, 2 -> 4 rows, 3 -> 6 columns, against the bilinear formula in double
  // (coordinates clamped to the input, as onnxruntime does).
  const HostTensor lin = run_resize({1, 1, 4, 6}, ResizeInterp::Linear, ResizeCoord::HalfPixel,
                                    ResizeNearest::RoundPreferFloor);
  const auto coordinate = [](std::int64_t o, double scale, std::int64_t in) {
    return std::clamp((static_cast<double>(o) + 0.5) / scale - 0.5, 0.0,
                      static_cast<double>(in - 1));
  };
  for (std::int64_t i = 0; i < 4; ++i)
    for (std::int64_t j = 0; j < 6; ++j) {
      const double yi = coordinate(i, 2.0, 2), xj = coordinate(j, 2.0, 3);
      const auto y0 = static_cast<std::int64_t>(std::floor(yi)),
                 x0 = static_cast<std::int64_t>(std::floor(xj));
      const std::int64_t y1 = std::min<std::int64_t>(y0 + 1, 1),
                         x1 = std::min<std::int64_t>(x0 + 1, 2);
      const double fy = yi - static_cast<double>(y0), fx = xj - static_cast<double>(x0);
      const auto at = [&](std::int64_t r, std::int64_t c) {
        return static_cast<double>(x.data[static_cast<std::size_t>(r * 3 + c)]);
      };
      const double want = (1 - fy) * ((1 - fx) * at(y0, x0) + fx * at(y0, x1)) +
                          fy * ((1 - fx) * at(y1, x0) + fx * at(y1, x1));
      INFO("row " << i << " column " << j);
      CHECK(lin.data[static_cast<std::size_t>(i * 6 + j)] == Approx(want).epsilon(1e-6));
    }
  // Resizing the batch axis and leaving the others alone works too.
  CHECK(
      run_resize({2, 1, 2, 3}, ResizeInterp::Nearest, ResizeCoord::Asymmetric, ResizeNearest::Floor)
          .data == std::vector<float>{1, 2, 3, 4, 5, 6, 1, 2, 3, 4, 5, 6});
}

TEST_CASE(
    "executor: an opaque operator is refused with its type, and does not stop weight "
    "precomputation") {
  Graph g;
  const Tensor x = g.input("x", {2, 4});
  const Tensor w = g.relu(g.weight("w", {2, 4}));  // weight-only: precomputable
  g.output(g.ewadd(g.opaque("Sin", {2, 4}, {g.ewmul(x, w)}), w));
  const RecExpr<TensorNode> p = g.program();
  const Bindings b = random_bindings(p, 4);
  try {
    (void)execute(p, b);
    FAIL("executed an opaque operator");
  } catch (const OpaqueOpError& e) {
    CHECK(e.op_type() == "Sin");
    CHECK(std::string(e.what()).find("'Sin'") != std::string::npos);
  }
  CHECK_THROWS_AS(execute(p, b, ExecuteOptions{false}), ExecutionError);
  // Precomputation evaluates the weight-only part only, so the opaque node is no obstacle (and
  // the input need not be bound).
  Bindings weights_only{{"w", b.at("w")}};
  const PrecomputedProgram pre = precompute_weights(p, weights_only);
  CHECK(op_histogram(pre.program)[static_cast<std::size_t>(Op::Relu)] == 0);
  CHECK(op_histogram(pre.program)[static_cast<std::size_t>(Op::Opaque)] == 1);
}

TEST_CASE("executor: merge and enlarge preserve the convolution") {
  // A grouped conv (4 groups) equals the conv with the weight merged by 2 (2 groups).
  Graph g;
  auto x = g.input("x", {1, 8, 5, 5});
  auto w = g.weight("w", {8, 2, 3, 3});
  g.output(g.conv2d(x, w));
  Graph h;
  auto hx = h.input("x", {1, 8, 5, 5});
  h.output(h.conv2d(hx, h.merge(h.weight("w", {8, 2, 3, 3}), 4, 2)));
  const VerifyResult m = verify(g.program(), h.program());
  CHECK(m.ok);
  INFO(m.message);
  // A 1x1 conv equals the 3x3 conv with the enlarged kernel (SAME, stride 1).
  Graph e1;
  e1.output(e1.conv2d(e1.input("x", {1, 4, 6, 6}), e1.weight("w", {4, 4, 1, 1})));
  Graph e2;
  e2.output(e2.conv2d(e2.input("x", {1, 4, 6, 6}),
                      e2.enlarge(e2.weight("w", {4, 4, 1, 1}), e2.weight("r", {4, 4, 3, 3}))));
  const VerifyResult v = verify(e1.program(), e2.program());
  INFO(v.message);
  CHECK(v.ok);
  // Enlarge itself: the 1x1 value sits in the centre.
  const auto en = execute(
      parse_program("(enlarge (weight w f32 (ints 1 1 1 1)) (weight r f32 (ints 1 1 3 3)))"),
      {{"w", HostTensor({1, 1, 1, 1}, {5})}, {"r", HostTensor({1, 1, 3, 3})}});
  require_close(en[0].data, {0, 0, 0, 0, 5, 0, 0, 0, 0});
}

TEST_CASE("executor: wino_weight by hand, and wino_conv2d against a direct loop") {
  // A kernel of ones: G 1 G^T = r r^T, r the row sums of G (1, 1.5, 0.5, 1).
  HostTensor ones({1, 1, 3, 3});
  std::fill(ones.data.begin(), ones.data.end(), 1.0f);
  const auto u =
      execute(parse_program("(wino_weight (weight w f32 (ints 1 1 3 3)))"), {{"w", ones}});
  const float r[4] = {1, 1.5f, 0.5f, 1};
  std::vector<float> want;
  for (float a : r)
    for (float b : r) want.push_back(a * b);
  require_close(u[0].data, want, 0);
  // Random geometry: sizes 1-11 (odd ones leave a clipped last tile row and column), one or two
  // images, 1-9 channels in and out, SAME and VALID, every activation; then blocks of tile rows
  // (512 channels of 40 columns: 6 tile rows a block, the last block partial).
  std::mt19937 gen(7);
  const auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(gen); };
  for (int checked = 0; checked < 120; ++checked) {
    const bool same = pick(0, 1) == 1;
    const std::int64_t n = pick(1, 2), c = pick(1, 9), o = pick(1, 9), h = pick(same ? 1 : 3, 11),
                       w = pick(same ? 1 : 3, 11);
    const auto act = static_cast<Activation>(pick(0, 3));
    Graph g;
    const Tensor x = g.input("x", {n, c, h, w});
    const Tensor k = g.weight("w", {o, c, 3, 3});
    g.output(g.wino_conv2d(x, g.wino_weight(k), same ? Padding::Same : Padding::Valid, act));
    Graph d;
    d.output(d.conv2d(d.input("x", {n, c, h, w}), d.weight("w", {o, c, 3, 3}), 1, 1,
                      same ? Padding::Same : Padding::Valid, act));
    const Bindings b = random_bindings(g.program(), static_cast<std::uint64_t>(checked));
    INFO("x [" << n << ", " << c << ", " << h << ", " << w << "] out " << o
               << (same ? " SAME" : " VALID") << " act " << static_cast<int>(act));
    if (act == Activation::None)
      require_close(run1(g, b).data, naive_conv(b.at("x"), b.at("w"), 1, 1, same));
    const VerifyResult v = verify(d.program(), g.program(), b);
    INFO(v.message);
    CHECK(v.ok);
  }
  Graph g;
  g.output(
      g.wino_conv2d(g.input("x", {1, 512, 40, 40}), g.wino_weight(g.weight("w", {3, 512, 3, 3}))));
  const Bindings b = random_bindings(g.program(), 5);
  require_close(run1(g, b).data, naive_conv(b.at("x"), b.at("w"), 1, 1, true));
}

TEST_CASE("executor: a fused body equals the unfused ops") {
  const std::string a = "(input a f32 (ints 2 3))", b = "(input b f32 (ints 2 3))";
  const auto unfused = parse_program("(relu (ewadd (tanh " + a + ") " + b + "))");
  const auto fused =
      parse_program("(fused (relu (ewadd (tanh (arg 0 f32 (ints 2 3))) (arg 1 f32 (ints 2 3)))) " +
                    a + " " + b + ")");
  const VerifyResult r = verify(unfused, fused);
  INFO(r.message);
  CHECK(r.ok);
  CHECK(r.abs_error == 0);
  // Two fused nodes sharing one body term with different inputs.
  const auto twice = parse_program("(noop (fused (exp (arg 0 f32 (ints 2 3))) " + a +
                                   ") (fused (exp (arg 0 f32 (ints 2 3))) " + b + "))");
  const auto plain = parse_program("(noop (exp " + a + ") (exp " + b + "))");
  CHECK(verify(plain, twice).ok);
}

TEST_CASE("executor: bf16 and f16 rounding") {
  CHECK(round_bf16(1.0f) == 1.0f);
  CHECK(round_bf16(1.0f + 1.0f / 256) == 1.0f);               // halfway: ties to even (down)
  CHECK(round_bf16(1.0f + 3.0f / 256) == 1.0f + 4.0f / 256);  // halfway: ties to even (up)
  CHECK(round_bf16(1.0f + 1.5f / 256) == 1.0f + 2.0f / 256);
  CHECK(round_f16(1.0f + 1.0f / 2048) == 1.0f);  // halfway, even
  CHECK(round_f16(1.0f + 3.0f / 2048) == 1.0f + 4.0f / 2048);
  CHECK(round_f16(65504.0f) == 65504.0f);
  CHECK(std::isinf(round_f16(70000.0f)));
  CHECK(round_f16(std::ldexp(1.0f, -24)) == std::ldexp(1.0f, -24));  // smallest subnormal
  CHECK(round_f16(0.1f) == Approx(0.0999755859375f));
  // A bf16 program rounds inputs and results.
  const auto p = parse_program("(ewadd (input a bf16 (ints 1)) (input b bf16 (ints 1)))");
  const auto r = execute(p, {{"a", HostTensor({1}, {1.0f}, DType::BF16)},
                             {"b", HostTensor({1}, {1.0f / 256}, DType::BF16)}});
  CHECK(r[0].data[0] == 1.0f);
  CHECK(r[0].dtype == DType::BF16);
}

TEST_CASE("executor: errors for missing bindings and shapes") {
  const auto p = parse_program("(relu (input a f32 (ints 2 2)))");
  CHECK_THROWS_AS(execute(p, {}), MissingBindingError);
  CHECK_THROWS_AS(execute(p, {{"a", HostTensor({2, 3})}}), BindingShapeError);
  try {
    (void)execute(p, {});
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("'a'") != std::string::npos);
  }
}

TEST_CASE("executor: verify catches a wrong program and reports the worst element") {
  const auto relu = parse_program("(relu (input x f32 (ints 4 4)))");
  const auto tanh = parse_program("(tanh (input x f32 (ints 4 4)))");
  const VerifyResult r = verify(relu, tanh);
  CHECK_FALSE(r.ok);
  CHECK(r.output == 0);
  CHECK(r.index < 16);
  CHECK(r.abs_error > 0.1);
  CHECK(std::fabs(r.actual - r.expected) == Approx(r.abs_error));
  CHECK(r.message.find("mismatch") == 0);
  const VerifyResult same = verify(relu, parse_program("(relu (relu (input x f32 (ints 4 4))))"));
  CHECK(same.ok);
  // Same name, another shape: the shared binding cannot fit both.
  CHECK_THROWS_AS(verify(relu, parse_program("(relu (input x f32 (ints 2 8)))")),
                  BindingShapeError);
  const VerifyResult shape =
      verify(relu, parse_program("(reshape (ints 2 8) (relu (input x f32 (ints 4 4))))"));
  CHECK_FALSE(shape.ok);
  CHECK(shape.message == "output 0: shape [4, 4] expected, [2, 8] computed");
}

TEST_CASE("executor: verify on given bindings, and compare_outputs alone") {
  const auto relu = parse_program("(relu (input x f32 (ints 2 2)))");
  const auto clip = parse_program(
      "(clip (input x f32 (ints 2 2)) (weight lo f32 (ints 1)) (weight hi f32 (ints 1)))");
  Bindings b{{"x", HostTensor({2, 2}, {-1, 0.5f, 2, -3})},
             {"lo", HostTensor({1}, {0})},
             {"hi", HostTensor({1}, {10})}};
  CHECK(verify(relu, clip, b).ok);  // clip to [0, 10] is relu on these values
  b["hi"] = HostTensor({1}, {1});
  const VerifyResult r = verify(relu, clip, b);
  CHECK_FALSE(r.ok);
  CHECK(r.index == 2);
  CHECK(r.expected == 2);
  CHECK(r.actual == 1);
  const VerifyResult near =
      compare_outputs({HostTensor({2}, {1, 100})}, {HostTensor({2}, {1.00005f, 100.009f})});
  CHECK(near.ok);
  CHECK(near.index == 1);
  CHECK_FALSE(compare_outputs({HostTensor({2}, {1, 100})}, {HostTensor({2}, {1.0002f, 100})}).ok);
  CHECK_FALSE(compare_outputs({HostTensor({2}, {1, 2})}, {}).ok);
  CHECK(compare_outputs({HostTensor({2}, {1, 2})}, {HostTensor({1, 2}, {1, 2})}).message ==
        "output 0: shape [2] expected, [1, 2] computed");
}

TEST_CASE("executor: precompute_weights removes weight-only subgraphs") {
  Graph g;
  auto x = g.input("x", {1, 8, 5, 5});
  auto w = g.merge(g.weight("w", {8, 2, 3, 3}), 4, 2);
  g.output(g.relu(g.conv2d(x, w)));
  const auto p = g.program();
  const Bindings b = random_bindings(p, 2);
  const PrecomputedProgram pre = precompute_weights(p, b);
  CHECK(op_histogram(pre.program)[static_cast<std::size_t>(Op::Merge)] == 0);
  CHECK(pre.bindings.count("x") == 1);
  const auto want = execute(p, b), got = execute(pre.program, pre.bindings);
  CHECK(want[0].data == got[0].data);
}

TEST_CASE("executor: WeightValues evaluates exactly the weight-only tensors") {
  Graph g;
  auto x = g.input("x", {1, 8, 5, 5});
  auto w = g.merge(g.weight("w", {8, 2, 3, 3}), 4, 2);
  g.output(g.relu(g.conv2d(x, w)));
  const auto p = g.program();
  Bindings b = random_bindings(p, 3);
  b.erase("x");  // inputs need no binding
  const WeightValues values(p, b);
  REQUIRE(values.size() == p.size());
  std::size_t merged = 0;
  for (std::size_t i = 0; i < p.size(); ++i) {
    const Op op = p[Id(i)].op();
    INFO("node " << i << " " << p[Id(i)].op_name());
    CHECK((values.value(i) != nullptr) == values.is_weight_tensor(i));
    if (op == Op::Weight) CHECK(values.value(i)->data == b.at("w").data);
    if (op == Op::Input || op == Op::Conv2d || op == Op::Relu) CHECK(values.value(i) == nullptr);
    if (op == Op::Merge) {
      // The merged filter is what the program computes there: the conv reads it unchanged.
      const auto alone = [] {
        Graph h;
        h.output(h.merge(h.weight("w", {8, 2, 3, 3}), 4, 2));
        return h.program();
      }();
      CHECK(values.value(i)->data == execute(alone, b).at(0).data);
      ++merged;
    }
  }
  CHECK(merged == 1);
  CHECK_THROWS_AS(values.value(p.size()), std::out_of_range);
  CHECK_THROWS_AS(WeightValues(p, Bindings{}), MissingBindingError);
}

TEST_CASE("executor: precompute_weights keeps a precomputed weight's layout") {
  // A bias relayouted to channels_last to be added to a channels_last activation (what the
  // layout rules make of conv + bias): the precomputed weight must stay channels_last.
  Graph g;
  auto x = g.input("x", {1, 4, 5, 5}, DType::F32, Layout::ChannelsLast);
  auto b = g.relayout(g.ewmul(g.weight("b", {1, 4, 5, 5}), g.weight("s", {1, 4, 5, 5})),
                      Layout::ChannelsLast);
  g.output(g.relu(g.ewadd(x, b)));
  const auto p = g.program();
  const Bindings bindings = random_bindings(p, 3);
  const PrecomputedProgram pre = precompute_weights(p, bindings);
  REQUIRE_NOTHROW(check_program(pre.program));
  CHECK(op_histogram(pre.program)[static_cast<std::size_t>(Op::Relayout)] == 0);
  const auto want = execute(p, bindings), got = execute(pre.program, pre.bindings);
  CHECK(want[0].data == got[0].data);
}

TEST_CASE("executor: precompute_pair binds what both programs read once") {
  // The same structure over two weights of one shape: both precompute a merged weight under
  // the same __pre<i> name, with other values.
  const auto build = [](const char* weight) {
    Graph g;
    auto x = g.input("x", {1, 8, 5, 5});
    g.output(g.relu(g.conv2d(x, g.merge(g.weight(weight, {8, 2, 3, 3}), 4, 2))));
    return g.program();
  };
  const RecExpr<TensorNode> a = build("w"), b = build("v");
  const PrecomputedProgram alone[2] = {precompute_weights(a, random_bindings(a, 1)),
                                       precompute_weights(b, random_bindings(b, 1))};
  const PrecomputedPair pair = precompute_pair(a, b, 1);
  REQUIRE(alone[0].bindings.size() == 2);  // x and the merged weight
  std::size_t renamed = 0;
  for (const auto& [name, tensor] : alone[1].bindings) {
    const auto mine = alone[0].bindings.find(name);
    const bool same = mine != alone[0].bindings.end() && mine->second.data == tensor.data;
    const std::string bound = same || mine == alone[0].bindings.end() ? name : name + ".1";
    renamed += bound != name;
    INFO(name << " bound as " << bound);
    REQUIRE(pair.bindings.count(bound) == 1);
    CHECK(pair.bindings.at(bound).data == tensor.data);
  }
  CHECK(renamed == 1);               // the merged weight; x is shared
  CHECK(pair.bindings.size() == 3);  // x once, two merged weights
  CHECK(pair.program[0].to_string() == alone[0].program.to_string());
  CHECK(pair.program[1].to_string() != alone[1].program.to_string());
  for (int k = 0; k < 2; ++k)
    CHECK(execute(pair.program[k], pair.bindings)[0].data ==
          execute(alone[k].program, alone[k].bindings)[0].data);
}

TEST_CASE("executor: rule verification fails an unsound rule") {
  const TensorRewrite bad = tensor_rewrite("bad", "test", "(relu ?x)", "(tanh ?x)");
  const auto lhs = parse_program("(relu (input x f32 (ints 4 4)))");
  const RecExpr<TensorNode> rhs = rhs_program(bad, lhs);
  CHECK(rhs.to_string() == "(tanh (input x f32 (ints 4 4)))");
  CHECK_FALSE(verify(lhs, rhs).ok);
  // A rule whose right-hand side is an existing class: the acyclic newest term is that class.
  const TensorRewrite id = tensor_rewrite("id", "test", "(relu (relu ?x))", "(relu ?x)");
  CHECK(rhs_program(id, parse_program("(relu (relu (input x f32 (ints 4 4))))")).to_string() ==
        "(relu (input x f32 (ints 4 4)))");
}

TEST_CASE("executor: every rule verified numerically on its instances") {
  std::size_t verified_rules = 0, instances = 0;
  std::vector<std::string> unverified;
  std::vector<TensorRewrite> rules = all_rules();
  for (auto& rule : layout_rules()) rules.push_back(std::move(rule));
  for (auto& rule : winograd_rules()) rules.push_back(std::move(rule));
  for (const TensorRewrite& rule : rules) {
    const auto found = find_rule_instances(rule);
    std::size_t n = 0;
    for (const RuleInstance& inst : found) {
      if (!inst.applied || n == 3) continue;
      const RecExpr<TensorNode> rhs = rhs_program(rule, inst.program);
      INFO("rule " << rule.name() << "\n  lhs " << inst.program.to_string() << "\n  rhs "
                   << rhs.to_string());
      CHECK(rhs.to_string() != inst.program.to_string());
      const VerifyResult r = verify(inst.program, rhs);
      INFO(r.message);
      CHECK(r.ok);
      ++n;
    }
    instances += n;
    if (n == 3)
      ++verified_rules;
    else
      unverified.push_back(rule.name());
  }
  INFO("verified " << verified_rules << " rules on " << instances << " instances");
  for (const auto& name : unverified) INFO("  fewer than three applied instances: " << name);
  CHECK(unverified.empty());
  CHECK(verified_rules == rules.size());
}

TEST_CASE(
    "executor: compare_times pairs the runs: a program doing a hundredth of the work is faster in "
    "every quartile") {
  const std::string x = "(input x f32 (ints 128 128))";
  std::string heavy = x;
  for (int i = 0; i < 8; ++i)
    heavy = fmt::format("(matmul 0 {} (weight w{} f32 (ints 128 128)))", heavy, i);
  const TimeComparison t =
      compare_times(parse_program(heavy), parse_program("(relu (input x f32 (ints 1 128)))"), 5);
  CHECK(t.ratio_q3 < 1.0);
  CHECK(t.faster_pairs == 5);
  CHECK(t.paired_sign() == 1);
  CHECK(t.paired_speedup_percent() > 0);
  const TimeComparison back =
      compare_times(parse_program("(relu (input x f32 (ints 1 128)))"), parse_program(heavy), 5);
  CHECK(back.paired_sign() == -1);
}

TEST_CASE("executor: the sign test of compare_times sharpens with the number of pairs") {
  // One-sided 5 %: 5 of 5 (p = 1/32), not 4 of 5 (p = 6/32); 27 of 41 (p = 0.030), not 26 of 41.
  CHECK(TimeComparison::sign_test(5, 5) == 1);
  CHECK(TimeComparison::sign_test(4, 5) == 0);
  CHECK(TimeComparison::sign_test(0, 5) == -1);
  CHECK(TimeComparison::sign_test(27, 41) == 1);
  CHECK(TimeComparison::sign_test(26, 41) == 0);
  CHECK(TimeComparison::sign_test(14, 41) == -1);
  CHECK(TimeComparison::sign_test(20, 41) == 0);
  CHECK(TimeComparison::sign_test(0, 0) == 0);
}

TEST_CASE("executor: profile_program times every evaluated node and groups them by op kind") {
  const std::string x = "(input x f32 (ints 64 64))";
  const RecExpr<TensorNode> p =
      parse_program("(relu (matmul 0 (matmul 0 " + x +
                    " (weight w f32 (ints 64 64))) (weight v f32 (ints 64 64))))");
  CHECK_THROWS_AS(profile_program(p, random_bindings(p, 1), 0), ExecutionError);
  const ProgramProfile prof = profile_program(p, random_bindings(p, 1), 3);
  CHECK(prof.runs == 3);
  CHECK(prof.median_ms > 0);
  CHECK(prof.min_ms <= prof.median_ms);
  // input, two weights, two matmuls, relu: every node but the attributes.
  std::size_t tensors = 0;
  for (std::size_t i = 0; i < p.size(); ++i) tensors += is_attribute(p[Id(i)].op()) ? 0 : 1;
  CHECK(prof.nodes.size() == tensors);
  for (std::size_t k = 1; k < prof.nodes.size(); ++k)
    CHECK(prof.nodes[k - 1].node < prof.nodes[k].node);
  double by_op = 0;
  for (const OpKindProfile& k : prof.by_op) by_op += k.ms;
  CHECK(by_op == Approx(prof.nodes_ms()));
  for (std::size_t k = 1; k < prof.by_op.size(); ++k)
    CHECK(prof.by_op[k - 1].ms >= prof.by_op[k].ms);
  const auto matmul = std::find_if(prof.by_op.begin(), prof.by_op.end(),
                                   [](const OpKindProfile& k) { return k.op == Op::MatMul; });
  REQUIRE(matmul != prof.by_op.end());
  CHECK(matmul->nodes == 2);
  const std::string table = format_profile(prof);
  CHECK(table.find("matmul") != std::string::npos);
  CHECK(table.find("execute") != std::string::npos);
  // The hook sees each evaluated node once per run, attributes included.
  std::size_t calls = 0;
  ExecuteOptions options;
  options.on_node = [&](std::size_t node, double seconds) {
    CHECK(node < p.size());
    CHECK(seconds >= 0);
    ++calls;
  };
  (void)execute(p, random_bindings(p, 1), options);
  CHECK(calls == p.size());
}

TEST_CASE(
    "executor: compare_times reports runs, medians within min and max, and rejects zero runs") {
  const RecExpr<TensorNode> a = parse_program("(relu (input a f32 (ints 64 64)))");
  const RecExpr<TensorNode> b = parse_program("(tanh (relu (input a f32 (ints 64 64))))");
  CHECK_THROWS_AS(compare_times(a, b, 0), ExecutionError);
  const TimeComparison t = compare_times(a, b, 5);
  CHECK(t.runs == 5);
  for (const TimeComparison::Times& x : {t.original, t.optimized}) {
    CHECK(x.min_ms > 0);
    CHECK(x.min_ms <= x.median_ms);
    CHECK(x.median_ms <= x.max_ms);
  }
  CHECK(t.speedup_percent() ==
        Approx(100.0 * (t.original.median_ms - t.optimized.median_ms) / t.original.median_ms));
  CHECK(t.ratio_q1 > 0);
  CHECK(t.ratio_q1 <= t.ratio_median);
  CHECK(t.ratio_median <= t.ratio_q3);
  CHECK(t.paired_speedup_percent() == Approx(100.0 * (1.0 - t.ratio_median)));
  // An ill-typed program fails the comparison before anything runs.
  CHECK_THROWS_AS(
      compare_times(a, parse_program("(ewadd (input a f32 (ints 2 2)) (input b f32 (ints 3 3)))"),
                    1),
      ShapeError);
}

TEST_CASE(
    "executor: run_abba_pairs runs both programs once per pair, the first alternating (ABBA)") {
  std::vector<int> order;
  run_abba_pairs(4, [&](int k) { order.push_back(k); });
  CHECK(order == std::vector<int>{0, 1, 1, 0, 0, 1, 1, 0});
  order.clear();
  run_abba_pairs(0, [&](int k) { order.push_back(k); });
  CHECK(order.empty());
  // One pair at a time, as a harness driven by its benchmark library asks.
  for (std::size_t pair = 0; pair < 4; ++pair)
    for (int j = 0; j < 2; ++j) order.push_back(abba_order(pair, j));
  CHECK(order == std::vector<int>{0, 1, 1, 0, 0, 1, 1, 0});
  static_assert(abba_order(1, 0) == 1 && abba_order(2, 0) == 0,
                "abba_order is usable at compile time");
}

TEST_CASE(
    "executor: run_warm_abba_pairs puts warm-up runs of the same program before each timed run") {
  std::vector<std::pair<int, bool>> calls;
  run_warm_abba_pairs(2, 2, [&](int k, bool timed) { calls.emplace_back(k, timed); });
  const std::vector<std::pair<int, bool>> expected{{0, false}, {0, false}, {0, true},  {1, false},
                                                   {1, false}, {1, true},  {1, false}, {1, false},
                                                   {1, true},  {0, false}, {0, false}, {0, true}};
  CHECK(calls == expected);
  // No warm-up runs: the plain ABBA sequence, every run timed.
  calls.clear();
  run_warm_abba_pairs(3, 0, [&](int k, bool timed) { calls.emplace_back(k, timed); });
  CHECK(calls == std::vector<std::pair<int, bool>>{
                     {0, true}, {1, true}, {1, true}, {0, true}, {0, true}, {1, true}});
  // One pair at a time: pair 1 of the sequence above, and pair 6 like pair 0.
  calls.clear();
  run_warm_abba_pair(1, 1, [&](int k, bool timed) { calls.emplace_back(k, timed); });
  CHECK(calls == std::vector<std::pair<int, bool>>{{1, false}, {1, true}, {0, false}, {0, true}});
  calls.clear();
  run_warm_abba_pair(6, 0, [&](int k, bool timed) { calls.emplace_back(k, timed); });
  CHECK(calls == std::vector<std::pair<int, bool>>{{0, true}, {1, true}});
  // compare_times with warm-up runs still times `runs` pairs and ranks the programs.
  const std::string x = "(input x f32 (ints 128 128))";
  std::string heavy = x;
  for (int i = 0; i < 8; ++i)
    heavy = fmt::format("(matmul 0 {} (weight w{} f32 (ints 128 128)))", heavy, i);
  const TimeComparison t = compare_times(
      parse_program(heavy), parse_program("(relu (input x f32 (ints 1 128)))"), 5, 1, 2);
  CHECK(t.runs == 5);
  CHECK(t.faster_pairs == 5);
  CHECK(t.paired_sign() == 1);
}
