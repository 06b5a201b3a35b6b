// tensat-opt: optimizes one of TENSAT's benchmark models, or an ONNX model, with the tensor
// superoptimizer (`tensat::tensor::optimize`) and reports what changed.
//
//   tensat-opt model.onnx --input x=1,3,48,320 --profile h100-sxm --out optimized.onnx --verify
//
// imports the ONNX model (tensat/onnx/import.h; the symbolic dimensions fixed by --input),
// optimizes it, and with --out exports the optimized program (tensat/onnx/export.h). Built with
// ONNX support only when CMake found libonnx-dev (TENSAT_HAS_ONNX).
//
//   tensat-opt --model nasrnn
//   iter  0: nodes 1234  classes 987  applied 321  elapsed 0.012 s
//   ...
//   op         before  after
//   matmul         80     40
//   ...
//
//   tensat-opt --model squeezenet --json
//   {"model":"squeezenet","ops_before":65,"ops_after":...,"cost_before":...,...}
//
// Without --json: one progress line per iteration as it finishes, then a before/after table
// (ops by type, total, cost and gain, optimizer time, stop reason, cycle nodes pruned). With
// --json: nothing but one JSON object on one line.
//
// --verify runs the original and the optimized program on the Eigen reference executor
// (tensat/exec/executor.h, `verify` with seed 1: random inputs and weights; an ONNX model's own
// weights with random inputs) and compares every output element, and with --out also the
// exported file read back; --measure N times both programs on that executor (weight-only
// subgraphs precomputed first; one untimed warm-up run, then the median of N runs; with
// --warm-runs K, K untimed runs of the same program before each timed run).
//
// Exit status: 0 on success, 2 on bad arguments (on stderr "tensat-opt: <reason>" and the usage
// line), 1 on an internal error or when --verify finds a mismatch.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <optional>
#include <iostream>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <tensat/core/error.h>
#include <tensat/tensor.h>
#include <tensat/exec/executor.h>
#include <tensat/tensor/models.h>

#ifdef TENSAT_HAS_ONNX
#include <tensat/onnx/export.h>
#include <tensat/onnx/import.h>
#endif

#include "common/cli.h"
#include "common/heap.h"

namespace {

namespace tt = tensat::tensor;

constexpr const char* kUsageLine =
    "usage: tensat-opt --model "
    "bert|nasrnn|resnext50|nasneta|inceptionv3|squeezenet|vgg19|encoder|decoder|resnet "
    "[--layers L] | MODEL.onnx "
    "[--input NAME=d0,d1,...] [--out FILE.onnx] "
    "[--node-limit N] [--iter-limit K] [--k-multi M] [--time-limit S] [--memory-limit BYTES] "
    "[--segment-ops T] [--threads N] [--extractor greedy-dag|ilp] "
    "[--ilp-time-limit S] [--profile NAME|FILE.json] [--no-fusion] [--no-guard] [--min-gain P] "
    "[--layouts auto|on|off] [--skip-layer-norm auto|fused|split] [--squeeze-batch auto|on|off] "
    "[--kernels] [--explain] [--verify] "
    "[--measure N] [--warm-runs K] [--json]\n";

constexpr const char* kHelp =
    "\n"
    "Optimizes one of TENSAT's benchmark models, or an ONNX model: equality saturation with the\n"
    "tensor rules under TENSAT's limits and cycle filtering, then extraction of the cheapest "
    "program.\n"
    "\n"
    "Options:\n"
    "  --model NAME          a built-in model: TENSAT's seven, or a stack of any depth: encoder\n"
    "                        (BERT-base-shaped), decoder (GPT-2-shaped), resnet (ResNet-50)\n"
    "  --layers L            with --model bert, encoder, decoder: L layers (default 8, 12, 12);\n"
    "                        with resnet: depth L (default 50, at least 35)\n"
    "  MODEL.onnx            or an ONNX model file (when built with libonnx-dev); operators the\n"
    "                        dialect does not know are kept as opaque nodes\n"
    "  --input NAME=d0,d1,.. the shape of the ONNX model's input NAME (required for symbolic\n"
    "                        dimensions such as a dynamic batch; repeat for several inputs)\n"
    "  --out FILE.onnx       write the optimized ONNX model there (fused kernels as plain "
    "operators);\n"
    "                        the model as it came when nothing cheaper was found\n"
    "  --node-limit N        e-graph node limit (default 50000)\n"
    "  --iter-limit K        iteration limit (default 15)\n"
    "  --k-multi M           iterations in which the multi-pattern rules run (default 1)\n"
    "  --time-limit S        saturation time limit in seconds (default 3600)\n"
    "  --memory-limit BYTES  e-graph memory limit (e-graph and match lists; default none; shared "
    "by\n"
    "                        the segments optimized at once)\n"
    "  --segment-ops T       cut a program of more than T operators into segments of at most T,\n"
    "                        each optimized with the limits above on its own, then stitched\n"
    "                        (default 1000; 0: never cut)\n"
    "  --threads N           threads (default 0: all cores): the search of a program optimized\n"
    "                        whole runs on them, or that many segments are optimized at once;\n"
    "                        the result does not depend on it\n"
    "  --extractor NAME      greedy-dag (default) or ilp\n"
    "  --ilp-time-limit S    seconds for the ilp extractor (default 30)\n"
    "  --profile P           cost with the roofline model on device profile P: a built-in name\n"
    "                        (h100-sxm, h200-sxm, a100-sxm-80gb, xeon-spr-56c, epyc-9654,\n"
    "                        xla-cpu-default, onnxruntime-cpu) or a profile JSON file; adds "
    "fusion\n"
    "                        and prints the predicted time by op kind before and after (default:\n"
    "                        simple cost). onnxruntime-cpu: for a model onnxruntime will run, "
    "which\n"
    "                        fuses by itself (no fusion, only the fold and transformer rules)\n"
    "  --no-fusion           with --profile: no fusion phase\n"
    "  --no-guard            with --profile: keep every predicted gain, even one inside the "
    "profile's\n"
    "                        own error (by default a profile that knows its error, as "
    "calibrate_host\n"
    "                        writes, keeps only the changes whose gain survives it: do no harm)\n"
    "  --min-gain P          with the guard: keep the input unless the gain at worst reaches P "
    "percent\n"
    "                        of its predicted time (default 1; 0: any positive gain)\n"
    "  --layouts W           auto (default), on or off: whether saturation also runs the "
    "physical-\n"
    "                        layout rules (channels_last convolutions); auto: when --profile's "
    "native\n"
    "                        convolution layout differs from a convolution's input's\n"
    "  --skip-layer-norm S   auto (default), fused or split: with --out, whether a residual add "
    "that\n"
    "                        only layer norms read is written as Add (onnxruntime fuses the two "
    "into\n"
    "                        SkipLayerNormalization) or as Sum (it does not; bench/ort measures "
    "that\n"
    "                        kernel slower than the two); auto: split for a --profile whose "
    "runtime\n"
    "                        fuses by itself (onnxruntime-cpu)\n"
    "  --squeeze-batch S     auto (default), on or off: with --out, whether activations [1, a, "
    "b] are\n"
    "                        written as [a, b], so that products are 2-d and a runtime joins "
    "their\n"
    "                        bias adds into Gemm without reshapes; auto: on for a --profile whose "
    "runtime\n"
    "                        fuses by itself\n"
    "  --kernels             with --profile: also list every kernel of the optimized program\n"
    "                        (node, op, compute- or memory-bound, MFLOP, MB, roofline terms in "
    "us)\n"
    "  --explain             explain every operator of the optimized program that the original\n"
    "                        does not have: the rules that rewrote it from the original's, each\n"
    "                        step checked (optimizes the program whole; exit status 1 if the\n"
    "                        check fails)\n"
    "  --verify              run the original and the optimized program on the Eigen reference\n"
    "                        executor (random inputs and weights, seed 1; an ONNX model keeps its\n"
    "                        weights) and compare every output element (rtol 1e-4, atol 1e-5; "
    "values\n"
    "                        non-finite in both pass and are counted); with --out, the exported "
    "file\n"
    "                        read back too; exit status 1 on a mismatch\n"
    "  --measure N           time the original and the optimized program on the Eigen executor\n"
    "                        (weights precomputed, one warm-up run each, then N >= 1 pairs of "
    "runs,\n"
    "                        alternating the two programs and which goes first; medians compared,\n"
    "                        and the median and quartiles of the ratios within pairs)\n"
    "  --warm-runs K         with --measure: K untimed runs of the same program before each timed\n"
    "                        run, so that it finds its data cached as its own last run left it, "
    "not\n"
    "                        as the other program's did (default 0)\n"
    "  --json                print only one JSON object on one line\n"
    "  --help                print this help and exit\n"
    "\n"
    "Without --json, prints one progress line per iteration (per segment when the program is "
    "cut),\n"
    "then a before/after table.\n"
    "Exit status: 0 success, 2 bad arguments or a model that cannot be read (or verified: opaque\n"
    "operators; or exported: --out then writes nothing), 1 internal error or --verify mismatch.\n";

using cli::BadInput;
using cli::one_line;

struct Options {
  std::string model;
  int layers = 0;         // --layers; 0: the model's default
  std::string onnx_path;  // an ONNX model file instead of --model
  std::vector<std::pair<std::string, tt::Dims>> input_shapes;  // --input, in order
  std::string out;                                             // --out
  tt::OptimizeOptions optimize;
  bool json = false;
  bool help = false;
  bool no_fusion = false;
  bool min_gain_given = false;
  bool kernels = false;  // --kernels
  bool verify = false;
  std::size_t measure = 0;    // runs per program; 0: no --measure
  std::size_t warm_runs = 0;  // --warm-runs: untimed runs of the same program before each timed one
  bool warm_runs_given = false;
  std::optional<bool> split_skip_layer_norm;  // --skip-layer-norm; unset: auto
  std::optional<bool> squeeze_batch;          // --squeeze-batch; unset: auto
};

/// NAME=d0,d1,... with positive integer dimensions.
std::pair<std::string, tt::Dims> parse_input_shape(const std::string& text) {
  const auto eq = text.find('=');
  const std::string bad =
      "--input must be NAME=d0,d1,... with positive dimensions, got '" + text + "'";
  if (eq == std::string::npos || eq == 0) throw BadInput{bad};
  tt::Dims dims;
  std::string rest = text.substr(eq + 1);
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = rest.find(',', start);
    const std::string part =
        rest.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    bool ok = !part.empty() && part.size() <= 12;
    for (char ch : part) ok = ok && ch >= '0' && ch <= '9';
    if (!ok) throw BadInput{bad};
    const auto d = static_cast<std::int64_t>(std::strtoll(part.c_str(), nullptr, 10));
    if (d <= 0) throw BadInput{bad};
    dims.push_back(d);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return {text.substr(0, eq), dims};
}

std::size_t parse_count(const std::string& name, const std::string& text) {
  bool ok = !text.empty() && text.size() <= 18;  // 18 digits cannot overflow
  for (char ch : text) ok = ok && ch >= '0' && ch <= '9';
  if (!ok) throw BadInput{name + " must be a non-negative integer, got '" + text + "'"};
  return static_cast<std::size_t>(std::strtoull(text.c_str(), nullptr, 10));
}

double parse_seconds(const std::string& name, const std::string& text) {
  const char* begin = text.c_str();
  char* end = nullptr;
  const double value = std::strtod(begin, &end);
  if (text.empty() || end != begin + text.size() || !std::isfinite(value) || value < 0)
    throw BadInput{name + " must be a non-negative number of seconds, got '" + text + "'"};
  return value;
}

Options parse_args(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      options.help = true;
      continue;
    }
    if (arg == "--json") {
      options.json = true;
      continue;
    }
    if (arg == "--no-fusion") {
      options.no_fusion = true;
      continue;
    }
    if (arg == "--no-guard") {
      options.optimize.do_no_harm = false;
      continue;
    }
    if (arg == "--verify") {
      options.verify = true;
      continue;
    }
    if (arg == "--kernels") {
      options.kernels = true;
      continue;
    }
    if (arg == "--explain") {
      options.optimize.explain = true;
      continue;
    }
    if (arg.rfind("--", 0) != 0) {
      // A positional argument: the ONNX model file.
      if (!options.onnx_path.empty())
        throw BadInput{"unexpected argument '" + arg + "' (one model file only)"};
      options.onnx_path = arg;
      continue;
    }
    // --name VALUE or --name=VALUE
    std::string name = arg, value;
    bool inline_value = false;
    if (const auto eq = arg.find('='); eq != std::string::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
      inline_value = true;
    }
    if (name != "--model" && name != "--node-limit" && name != "--iter-limit" &&
        name != "--k-multi" && name != "--time-limit" && name != "--extractor" &&
        name != "--ilp-time-limit" && name != "--profile" && name != "--measure" &&
        name != "--warm-runs" && name != "--input" && name != "--out" && name != "--layouts" &&
        name != "--memory-limit" && name != "--min-gain" && name != "--layers" &&
        name != "--segment-ops" && name != "--threads" && name != "--skip-layer-norm" &&
        name != "--squeeze-batch")
      throw BadInput{"unknown option '" + name + "'"};
    if (!inline_value) {
      if (i + 1 >= argc) throw BadInput{"option " + name + " needs a value"};
      value = argv[++i];
    }
    if (name == "--model") {
      options.model = value;  // checked by load(), which asks the models library
    } else if (name == "--measure") {
      bool ok = !value.empty() && value.size() <= 9;
      for (char ch : value) ok = ok && ch >= '0' && ch <= '9';
      if (ok) options.measure = static_cast<std::size_t>(std::strtoull(value.c_str(), nullptr, 10));
      if (!ok || options.measure == 0)
        throw BadInput{"--measure must be a positive integer, got '" + value + "'"};
    } else if (name == "--warm-runs") {
      bool ok = !value.empty() && value.size() <= 9;
      for (char ch : value) ok = ok && ch >= '0' && ch <= '9';
      if (!ok) throw BadInput{"--warm-runs must be a non-negative integer, got '" + value + "'"};
      options.warm_runs = static_cast<std::size_t>(std::strtoull(value.c_str(), nullptr, 10));
      options.warm_runs_given = true;
    } else if (name == "--input") {
      options.input_shapes.push_back(parse_input_shape(value));
    } else if (name == "--out") {
      if (value.empty()) throw BadInput{"--out needs a file name"};
      options.out = value;
    } else if (name == "--layers") {
      const std::size_t layers = parse_count(name, value);
      if (layers == 0 || layers > 100'000)
        throw BadInput{"--layers must be in [1, 100000], got '" + value + "'"};
      options.layers = static_cast<int>(layers);
    } else if (name == "--segment-ops") {
      options.optimize.segment_ops = parse_count(name, value);
    } else if (name == "--threads") {
      options.optimize.threads = parse_count(name, value);
      if (options.optimize.threads > 1024)
        throw BadInput{"--threads must be at most 1024, got '" + value + "'"};
    } else if (name == "--node-limit") {
      options.optimize.node_limit = parse_count(name, value);
    } else if (name == "--memory-limit") {
      options.optimize.memory_limit = parse_count(name, value);
    } else if (name == "--iter-limit") {
      options.optimize.iter_limit = parse_count(name, value);
    } else if (name == "--k-multi") {
      options.optimize.k_multi = parse_count(name, value);
    } else if (name == "--time-limit") {
      options.optimize.time_limit_seconds = parse_seconds(name, value);
    } else if (name == "--min-gain") {
      const char* begin = value.c_str();
      char* end = nullptr;
      const double percent = std::strtod(begin, &end);
      if (value.empty() || end != begin + value.size() || !std::isfinite(percent) || percent < 0 ||
          percent > 100)
        throw BadInput{"--min-gain must be a percent in [0, 100], got '" + value + "'"};
      options.optimize.min_gain_percent = percent;
      options.min_gain_given = true;
    } else if (name == "--ilp-time-limit") {
      options.optimize.ilp.time_limit_seconds = parse_seconds(name, value);
    } else if (name == "--profile") {
      try {
        options.optimize.profile = tt::resolve_profile(value);
      } catch (const tensat::Error& e) {
        throw BadInput{std::string("--profile: ") + e.what()};
      }
    } else if (name == "--skip-layer-norm") {
      if (value == "fused" || value == "split")
        options.split_skip_layer_norm = value == "split";
      else if (value != "auto")
        throw BadInput{"--skip-layer-norm must be auto, fused or split, got '" + value + "'"};
    } else if (name == "--squeeze-batch") {
      if (value == "on" || value == "off")
        options.squeeze_batch = value == "on";
      else if (value != "auto")
        throw BadInput{"--squeeze-batch must be auto, on or off, got '" + value + "'"};
    } else if (name == "--layouts") {
      if (value == "auto")
        options.optimize.layouts = tt::LayoutSearch::Auto;
      else if (value == "on")
        options.optimize.layouts = tt::LayoutSearch::On;
      else if (value == "off")
        options.optimize.layouts = tt::LayoutSearch::Off;
      else
        throw BadInput{"--layouts must be auto, on or off, got '" + value + "'"};
    } else {
      if (value == "greedy-dag")
        options.optimize.extractor = tt::TensorExtractor::GreedyDag;
      else if (value == "ilp")
        options.optimize.extractor = tt::TensorExtractor::Ilp;
      else
        throw BadInput{"unknown extractor '" + value + "' (expected greedy-dag or ilp)"};
    }
  }
  if (options.help) return options;
  if (!options.model.empty() && !options.onnx_path.empty())
    throw BadInput{"give either --model or an ONNX model file, not both"};
  if (options.model.empty() && options.onnx_path.empty())
    throw BadInput{"missing --model (or an ONNX model file)"};
  if (options.onnx_path.empty() && !options.input_shapes.empty())
    throw BadInput{"--input needs an ONNX model file"};
  if (options.layers != 0) {
    bool stack = false;
    for (const auto& s : tt::models::stack_defaults()) stack = stack || s.first == options.model;
    if (!stack) throw BadInput{"--layers needs --model bert, encoder, decoder or resnet"};
    if (options.model == "resnet" && options.layers < 35)
      throw BadInput{"--layers: resnet's depth must be at least 35"};
  }
  if (options.onnx_path.empty() && !options.out.empty())
    throw BadInput{"--out needs an ONNX model file"};
#ifndef TENSAT_HAS_ONNX
  if (!options.onnx_path.empty())
    throw BadInput{
        "this tensat-opt was built without ONNX support (libonnx-dev, CMake option "
        "TENSAT_WITH_ONNX)"};
#endif
  if (options.no_fusion && !options.optimize.profile) throw BadInput{"--no-fusion needs --profile"};
  if (!options.optimize.do_no_harm && !options.optimize.profile)
    throw BadInput{"--no-guard needs --profile"};
  if (options.min_gain_given && !options.optimize.profile)
    throw BadInput{"--min-gain needs --profile"};
  if (options.warm_runs_given && !options.measure) throw BadInput{"--warm-runs needs --measure"};
  if (options.kernels && !options.optimize.profile) throw BadInput{"--kernels needs --profile"};
  // A runtime that fuses kernels itself gets no fusion phase (optimize skips it as well).
  options.optimize.fusion = options.optimize.profile.has_value() && !options.no_fusion &&
                            !options.optimize.profile->runtime_fusion;
  if (!options.split_skip_layer_norm)
    options.split_skip_layer_norm =
        options.optimize.profile.has_value() && options.optimize.profile->runtime_fusion;
  if (!options.squeeze_batch)
    options.squeeze_batch =
        options.optimize.profile.has_value() && options.optimize.profile->runtime_fusion;
  return options;
}

/// Relative gain in percent (positive: cheaper after).
double gain_percent(double before, double after) {
  return before != 0 ? (before - after) / before * 100.0 : 0.0;
}

/// A JSON number, or null for NaN and infinities (which JSON cannot hold).
nlohmann::ordered_json number(double value) {
  if (!std::isfinite(value)) return nullptr;
  return value;
}

/// What is optimized: a built-in model, or an imported ONNX model with its weights.
struct Loaded {
  tensat::RecExpr<tt::TensorNode> program;
  std::string name;  // the --model name or the file
  bool onnx = false;
#ifdef TENSAT_HAS_ONNX
  tensat::onnx::ImportedModel imported;
#endif
};

Loaded load(const Options& options) {
  Loaded loaded;
  if (options.onnx_path.empty()) {
    try {  // an unknown name: the library's error lists the valid ones
      loaded.program = (options.layers != 0 ? tt::models::build_model(options.model, options.layers)
                                            : tt::models::build_model(options.model))
                           .program();
    } catch (const tensat::Error& e) {
      throw BadInput{e.what()};
    }
    loaded.name = options.model;
    return loaded;
  }
#ifdef TENSAT_HAS_ONNX
  tensat::onnx::ImportOptions import_options;
  for (const auto& [name, dims] : options.input_shapes)
    if (!import_options.input_shapes.emplace(name, dims).second)
      throw BadInput{"--input " + name + " is given twice"};
  try {
    loaded.imported = tensat::onnx::import(options.onnx_path, import_options);
  } catch (const tensat::onnx::ImportError& e) {
    throw BadInput{options.onnx_path + ": " + e.what()};
  }
  loaded.program = loaded.imported.program;
  loaded.name = options.onnx_path;
  loaded.onnx = true;
  const auto& opaque = loaded.imported.opaque_ops;
  if ((options.verify || options.measure) && !opaque.empty()) {
    std::string types;
    for (const std::string& t : opaque) types += (types.empty() ? "" : ", ") + t;
    throw BadInput{std::string(options.verify ? "--verify" : "--measure") +
                   ": the executor cannot run " + options.onnx_path +
                   ": it has opaque operators (" + types + ")"};
  }
  // Checked before optimizing, without creating the file: it is written only once complete.
  if (!options.out.empty()) {
    std::error_code ec;
    const std::filesystem::path folder = std::filesystem::path(options.out).parent_path();
    if (!std::filesystem::is_directory(folder.empty() ? "." : folder, ec) ||
        std::filesystem::is_directory(options.out, ec))
      throw BadInput{"--out: cannot write '" + options.out + "'"};
  }
#endif
  return loaded;
}

int run(const Options& options) {
  const Loaded loaded = load(options);
  const tensat::RecExpr<tt::TensorNode>& program = loaded.program;

  tt::OptimizeOptions opts = options.optimize;
  if (opts.profile)
    opts.profile = tt::profile_for(*opts.profile, program);  // as optimize prices it
  double elapsed = 0;
  bool any_reported = false;
  std::size_t last_reported = 0;
  opts.on_iteration = [&](std::size_t index, const tensat::Iteration& it) {
    if (any_reported && index <= last_reported) return;  // each iteration once
    any_reported = true;
    last_reported = index;
    elapsed += it.total_time;
    if (options.json) return;
    std::size_t applied = 0;
    for (const auto& rule : it.applied) applied += rule.second;
    std::cout << fmt::format("iter {:>2}: nodes {}  classes {}  applied {}  elapsed {:.3f} s\n",
                             index, it.egraph_nodes, it.egraph_classes, applied, elapsed)
              << std::flush;
  };

  opts.on_segment = [&](const tt::SegmentReport& r) {
    if (options.json) return;
    std::cout << fmt::format(
                     "segment {:>{}}/{}: ops {}  in {}  out {}  {}  iterations {}  nodes {}  cost "
                     "{:.4g} -> {:.4g}  "
                     "{:.3f} s\n",
                     r.index + 1, fmt::formatted_size("{}", r.count), r.count, r.ops, r.live_in,
                     r.live_out, r.stop_reason.to_string(), r.iterations, r.egraph_nodes,
                     r.cost_before, r.cost_after, r.saturation_seconds + r.extraction_seconds)
              << std::flush;
  };

  const tt::OptimizeResult result = tt::optimize(program, opts);

  const auto before = tt::op_histogram(program);
  const auto after = tt::op_histogram(result.optimized);
  const std::size_t total_before = tt::count_ops(program);
  const std::size_t total_after = tt::count_ops(result.optimized);
  const double gain = gain_percent(result.cost_before, result.cost_after);
  const bool ilp = options.optimize.extractor == tt::TensorExtractor::Ilp;
  const std::string stop = result.stop_reason.to_string();
  const std::string status =
      result.extraction_status == tensat::ExtractionStatus::Optimal ? "optimal" : "feasible";

  std::optional<tt::VerifyResult> verified, verified_export;
#ifdef TENSAT_HAS_ONNX
  // Nothing cheaper found: --out gets the model as it came, not the export's spelling of the
  // same program (which a runtime may fuse less well: a LayerNormalization over two axes comes
  // back spelled out), symbolic dimensions included.
  // Residual adds split from their layer norms (--skip-layer-norm) are a gain of the export's
  // own, which the original does not have.
  bool out_original = result.optimized == program;
  std::size_t skip_sums = 0;     // residual adds written as Sum
  tt::SqueezedProgram squeezed;  // --squeeze-batch: what the export writes
  if (loaded.onnx && !options.out.empty()) {
    try {
      // Exported either way, so that what the export refuses is refused alike.
      tensat::onnx::ExportOptions export_options =
          tensat::onnx::export_options_for(loaded.imported);
      export_options.unfused_skip_layer_norm = *options.split_skip_layer_norm;
      if (*options.squeeze_batch) squeezed = tt::squeeze_unit_batch(result.optimized);
      ::onnx::ModelProto model =
          tensat::onnx::export_model(squeezed.changed() ? squeezed.program : result.optimized,
                                     loaded.imported.weights, export_options);
      // The exporter writes a top-level Sum for nothing else (the importer turns every Sum into
      // adds), so the graph's Sums are the residual adds it split.
      skip_sums = static_cast<std::size_t>(
          std::count_if(model.graph().node().begin(), model.graph().node().end(),
                        [](const ::onnx::NodeProto& n) { return n.op_type() == "Sum"; }));
      out_original = out_original && skip_sums == 0 && !squeezed.changed();
      if (out_original) {
        std::ifstream in(options.onnx_path, std::ios::binary);
        if (!in || !model.ParseFromIstream(&in))
          throw tensat::Error("cannot read " + options.onnx_path + " again");
      }
      tensat::onnx::save_model(model, options.out);
    } catch (const tensat::onnx::ExportError& e) {
      // A file that cannot be written, or a model ONNX cannot hold (an operator it does not know).
      throw BadInput{std::string("--out: ") + e.what()};
    }
  }
#endif
  if (options.verify && !loaded.onnx) verified = tt::verify(program, result.optimized, 1);
#ifdef TENSAT_HAS_ONNX
  if (options.verify && loaded.onnx) {
    // The model's own weights, random inputs (seed 1).
    tt::Bindings bindings = loaded.imported.weights;
    for (auto& [name, t] : tt::random_bindings(program, 1)) bindings.emplace(name, std::move(t));
    const std::vector<tt::HostTensor> want = tt::execute(program, bindings);
    verified = tt::compare_outputs(want, tt::execute(result.optimized, bindings));
    if (!options.out.empty()) {
      // The exported file read back, on the same inputs.
      tensat::onnx::ImportOptions again_options;
      const auto& m = loaded.imported;
      for (std::size_t i = 0; i < m.inputs.size(); ++i)
        again_options.input_shapes[m.inputs[i]] = m.input_dims[i];
      const tensat::onnx::ImportedModel again = tensat::onnx::import(options.out, again_options);
      tt::Bindings again_bindings = again.weights;
      for (std::size_t i = 0; i < again.inputs.size(); ++i) {
        const auto at = std::find(m.inputs.begin(), m.inputs.end(), again.inputs[i]);
        if (at == m.inputs.end())
          throw tensat::Error("the exported model has an input the original does not");
        again_bindings.emplace(
            again.input_symbols[i],
            bindings.at(m.input_symbols[static_cast<std::size_t>(at - m.inputs.begin())]));
      }
      verified_export = tt::compare_outputs(want, tt::execute(again.program, again_bindings));
    }
  }
#endif
  const tt::ProgramExplanation* explained = result.explanation ? &*result.explanation : nullptr;
  const int exit_code = (verified && !verified->ok) || (verified_export && !verified_export->ok) ||
                                (explained && !explained->check.ok)
                            ? 1
                            : 0;
  double measured_before = 0, measured_after = 0;
  tt::TimeComparison times;
  if (options.measure) {
    times = tt::compare_times(program, result.optimized, options.measure, 1, options.warm_runs);
    measured_before = times.original.median_ms;
    measured_after = times.optimized.median_ms;
  }

  if (options.json) {
    nlohmann::ordered_json by_before = nlohmann::ordered_json::object();
    nlohmann::ordered_json by_after = nlohmann::ordered_json::object();
    for (std::size_t k = 0; k < tt::kNumOps; ++k) {
      if (before[k] == 0 && after[k] == 0) continue;
      const std::string name(tt::op_name(static_cast<tt::Op>(k)));
      by_before[name] = before[k];
      by_after[name] = after[k];
    }
    nlohmann::ordered_json line;
    line["model"] = loaded.name;
    if (options.layers != 0) line["layers"] = options.layers;
#ifdef TENSAT_HAS_ONNX
    if (loaded.onnx) {
      const auto& m = loaded.imported;
      line["onnx_opset"] = m.opset;
      nlohmann::ordered_json inputs = nlohmann::ordered_json::object();
      for (std::size_t i = 0; i < m.inputs.size(); ++i)
        inputs[m.inputs[i]] =
            std::vector<std::int64_t>(m.input_dims[i].begin(), m.input_dims[i].end());
      line["onnx_inputs"] = std::move(inputs);
      line["opaque_ops"] = m.opaque_ops;
      if (!options.out.empty()) line["out"] = options.out;
    }
#endif
    line["node_limit"] = options.optimize.node_limit;
    line["iter_limit"] = options.optimize.iter_limit;
    line["k_multi"] = options.optimize.k_multi;
    line["time_limit"] = options.optimize.time_limit_seconds;
    line["extractor"] = ilp ? "ilp" : "greedy-dag";
    if (ilp) line["ilp_time_limit"] = options.optimize.ilp.time_limit_seconds;
    line["ops_before"] = total_before;
    line["ops_after"] = total_after;
    line["cost_before"] = number(result.cost_before);
    line["cost_after"] = number(result.cost_after);
    line["gain_percent"] = number(gain);
    line["optimize_seconds"] = result.optimize_seconds();
    line["saturation_seconds"] = result.saturation_seconds;
    line["extraction_seconds"] = result.extraction_seconds;
    line["stop_reason"] = stop;
    line["iterations"] = result.report.iterations;
    line["egraph_nodes"] = result.report.egraph_nodes;
    line["egraph_classes"] = result.report.egraph_classes;
    line["cycle_nodes_pruned"] = result.cycle_nodes_pruned;
    line["segment_ops"] = opts.segment_ops;
    line["segments"] = result.segments.size();
    line["extraction_status"] = status;
#ifdef TENSAT_HAS_ONNX
    if (loaded.onnx && !options.out.empty()) {
      line["out_written"] = out_original ? "original" : "optimized";
      line["skip_layer_norm"] = *options.split_skip_layer_norm ? "split" : "fused";
      line["residual_sums"] = skip_sums;
      line["squeeze_batch"] = *options.squeeze_batch ? "on" : "off";
      line["squeezed_values"] = squeezed.squeezed;
      line["squeeze_reshapes_removed"] = squeezed.removed;
      line["squeeze_reshapes_added"] = squeezed.boundary;
    }
#endif
    line["kept_original"] = result.kept_original;
    line["ops_by_type_before"] = std::move(by_before);
    line["ops_by_type_after"] = std::move(by_after);
    if (opts.profile) {
      line["profile"] = opts.profile->name;
      line["fusion"] = opts.fusion;
      line["fusion_nodes_added"] = result.fusion_nodes_added;
      line["layout_rules"] = result.layout_rules;
      line["winograd_rules"] = result.winograd_rules;
      line["cost_unit"] = "us";
      line["guard"] = opts.do_no_harm && opts.profile->knows_its_error();
      line["min_gain_percent"] = opts.min_gain_percent;
      line["predicted_gain_us"] = number(result.gain.predicted_us);
      line["worst_case_gain_us"] = number(result.gain.worst_case_us);
      line["inside_error_band"] = result.inside_error_band;
      const auto kinds = [&](const tt::ProgramTime& t) {
        nlohmann::ordered_json by = nlohmann::ordered_json::object();
        for (const tt::OpKindTime& k : t.by_op)
          by[std::string(tt::op_name(k.op))] = {{"kernels", k.kernels},
                                                {"compute_bound", k.compute_bound},
                                                {"memory_bound", k.memory_bound},
                                                {"time_us", number(k.time_us)}};
        return by;
      };
      const tt::ProgramTime after_time = tt::program_breakdown(result.optimized, *opts.profile);
      line["time_by_op_before"] = kinds(tt::program_breakdown(program, *opts.profile));
      line["time_by_op_after"] = kinds(after_time);
      if (options.kernels) {
        nlohmann::ordered_json list = nlohmann::ordered_json::array();
        for (const tt::KernelReport& k : after_time.kernels)
          list.push_back({{"node", k.node},
                          {"op", std::string(tt::op_name(k.op))},
                          {"bound", std::string(tt::bound_name(k.time.bound))},
                          {"flops", number(k.work.flops)},
                          {"bytes", number(k.work.bytes_moved())},
                          {"compute_us", number(k.time.compute_us)},
                          {"memory_us", number(k.time.memory_us)},
                          {"launch_us", number(k.time.launch_us)},
                          {"time_us", number(k.time.total_us)}});
        line["kernels_after"] = std::move(list);
      }
    }
    if (explained) {
      nlohmann::ordered_json ops = nlohmann::ordered_json::array();
      for (std::size_t k = 0; k < explained->operators.size(); ++k) {
        const tt::NewOperator& op = explained->operators[k];
        nlohmann::ordered_json item = {
            {"node", op.node.index()},
            {"op", std::string(tt::op_name(result.optimized[op.node].op()))}};
        if (op.original) item["original"] = op.original->index();
        if (op.inside) item["built_by"] = op.inside->index();
        if (op.goal != tensat::TreeExplanation<tt::TensorNode>::kNone) {
          nlohmann::ordered_json steps = nlohmann::ordered_json::array();
          for (const auto& [rule, forward] : explained->proof.local_chain(op.goal))
            steps.push_back({{"rule", rule}, {"forward", forward}});
          item["rules"] = std::move(steps);
          item["operand_steps"] =
              explained->proof.chain(op.goal).size() - explained->proof.local_chain(op.goal).size();
        }
        ops.push_back(std::move(item));
      }
      line["explanation"] = {{"new_operators", explained->operators.size()},
                             {"steps", explained->check.steps},
                             {"rule_steps", explained->check.rule_steps},
                             {"trusted_steps", explained->check.trusted_steps},
                             {"trusted_rules", explained->trusted_rules},
                             {"checked", explained->check.ok},
                             {"error", explained->check.error},
                             {"operators", std::move(ops)}};
    }
    if (verified) {
      line["verify_ok"] = verified->ok;
      line["verify_worst_rel_error"] = number(verified->rel_error);
      line["verify_nonfinite"] = verified->nonfinite;
      line["verify_compared"] = verified->compared;
      if (!verified->ok) line["verify_message"] = verified->message;
    }
    if (verified_export) {
      line["verify_export_ok"] = verified_export->ok;
      line["verify_export_worst_rel_error"] = number(verified_export->rel_error);
      if (!verified_export->ok) line["verify_export_message"] = verified_export->message;
    }
    if (options.measure) {
      line["measured_paired_speedup_percent"] = number(times.paired_speedup_percent());
      line["measured_ratio_q1"] = number(times.ratio_q1);
      line["measured_ratio_q3"] = number(times.ratio_q3);
      // The sign test over the pairs: how many the optimized program won, and the verdict
      // (+1 faster, -1 slower, 0 within noise at p < 0.05, `TimeComparison::paired_sign`).
      line["measured_faster_pairs"] = times.faster_pairs;
      line["measured_paired_sign"] = times.paired_sign();
      line["measure_runs"] = options.measure;
      line["measure_warm_runs"] = options.warm_runs;
      line["measured_original_ms"] = measured_before;
      line["measured_optimized_ms"] = measured_after;
      line["measured_speedup_percent"] = number(gain_percent(measured_before, measured_after));
    }
    std::cout << line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << '\n'
              << std::flush;
    return exit_code;
  }

  std::string out = fmt::format("\n{:<20} {:>12} {:>12}\n", "op", "before", "after");
  for (std::size_t k = 0; k < tt::kNumOps; ++k) {
    if (before[k] == 0 && after[k] == 0) continue;
    out += fmt::format("{:<20} {:>12} {:>12}\n", tt::op_name(static_cast<tt::Op>(k)), before[k],
                       after[k]);
  }
  out += fmt::format("{:<20} {:>12} {:>12}\n", "total ops", total_before, total_after);
  out += fmt::format("{:<20} {:>12.4f} {:>12.4f}  (gain {:.2f}%){}\n", "cost", result.cost_before,
                     result.cost_after, gain,
                     opts.profile ? " us predicted on " + opts.profile->name : "");
  if (opts.profile) {
    out += "\npredicted time by op kind, before (kernels; compute- and memory-bound):\n";
    out += tt::format_breakdown(tt::program_breakdown(program, *opts.profile));
    const tt::ProgramTime after_time = tt::program_breakdown(result.optimized, *opts.profile);
    out += "\nafter:\n";
    out += tt::format_breakdown(after_time);
    out += fmt::format("fusion              {} ({} e-nodes added)\n", opts.fusion ? "on" : "off",
                       result.fusion_nodes_added);
    out += fmt::format("layout rules        {}\n", result.layout_rules ? "on" : "off");
    out += fmt::format("winograd rule       {}\n", result.winograd_rules ? "on" : "off");
    if (options.kernels) {
      out += "\nkernels of the optimized program:\n";
      out += tt::format_kernels(after_time);
    }
  }
  out += "\n";
  out += fmt::format(
      "model               {}{}\n", loaded.name,
      options.layers != 0 ? fmt::format(" ({} layers)", options.layers) : std::string());
#ifdef TENSAT_HAS_ONNX
  if (loaded.onnx) {
    const auto& m = loaded.imported;
    std::string inputs;
    for (std::size_t i = 0; i < m.inputs.size(); ++i)
      inputs +=
          fmt::format("{}{} {}", i ? ", " : "", m.inputs[i], tt::dims_to_string(m.input_dims[i]));
    std::string opaque;
    for (const std::string& t : m.opaque_ops) opaque += (opaque.empty() ? "" : ", ") + t;
    out += fmt::format("onnx                opset {}, inputs {}\n", m.opset, inputs);
    out += fmt::format("opaque operators    {}\n", opaque.empty() ? "none" : opaque);
    if (!options.out.empty()) out += fmt::format("exported            {}\n", options.out);
    if (skip_sums)
      out += fmt::format("residual sums       {} (adds only layer norms read, written as Sum)\n",
                         skip_sums);
    if (squeezed.changed())
      out += fmt::format(
          "squeezed batch      {} activations [1, a, b] written as [a, b] ({} reshapes gone, "
          "{} added)\n",
          squeezed.squeezed, squeezed.removed, squeezed.boundary);
  }
#endif
  out +=
      fmt::format("optimizer time      {:.3f} s (saturation {:.3f} s, extraction {:.3f} s, {})\n",
                  result.optimize_seconds(), result.saturation_seconds, result.extraction_seconds,
                  ilp ? "ilp " + status : std::string("greedy-dag"));
  out +=
      fmt::format("stop reason         {} after {} iterations\n", stop, result.report.iterations);
  out += fmt::format("e-graph             {} nodes, {} classes\n", result.report.egraph_nodes,
                     result.report.egraph_classes);
  out += fmt::format("cycle nodes pruned  {}\n", result.cycle_nodes_pruned);
  if (!result.segments.empty())
    out += fmt::format("segments            {} of at most {} ops, {} thread{}\n",
                       result.segments.size(), opts.segment_ops,
                       opts.threads == 0 ? std::string("all") : std::to_string(opts.threads),
                       opts.threads == 1 ? "" : "s");
  if (result.inside_error_band)
    out +=
        "note                no change gains anything within the profile's own error; the input "
        "was kept\n";
  else if (result.kept_original)
    out +=
        "note                the extracted program cost more than the input; the input was kept\n";
  else if (opts.profile && opts.profile->knows_its_error())
    out += fmt::format(
        "gain at worst       {:.1f} us of {:.1f} us predicted (the profile's own error "
        "counted{})\n",
        result.gain.worst_case_us, result.gain.predicted_us, opts.do_no_harm ? "" : "; --no-guard");
  if (options.measure)
    out += fmt::format(
        "measured: original {:.3f} ms, optimized {:.3f} ms, speedup {:.2f}% (paired {:.2f}%, "
        "optimized / original "
        "quartiles {:.3f}-{:.3f}{})\n",
        measured_before, measured_after, gain_percent(measured_before, measured_after),
        times.paired_speedup_percent(), times.ratio_q1, times.ratio_q3,
        options.warm_runs ? fmt::format(", warm-up runs before each: {}", options.warm_runs)
                          : std::string());
  if (verified) {
    const tt::VerifyResult& v = *verified;
    if (v.ok) {
      out += fmt::format("verify: ok, worst relative error {:.3g} (output {}, element {})",
                         v.rel_error, v.output, v.index);
      if (v.nonfinite)
        out += fmt::format(", {} of {} expected values not finite (equal in both)", v.nonfinite,
                           v.compared);
      out += "\n";
    } else {
      out += "verify: MISMATCH " + v.message + "\n";
    }
  }
  if (verified_export) {
    const tt::VerifyResult& v = *verified_export;
    out += v.ok ? fmt::format(
                      "verify export: ok, the file read back agrees, worst relative error {:.3g}\n",
                      v.rel_error)
                : "verify export: MISMATCH " + v.message + "\n";
  }
  if (explained) {
    const tt::ProgramExplanation& e = *explained;
    std::string trusted;
    for (const std::string& r : e.trusted_rules) trusted += (trusted.empty() ? "" : ", ") + r;
    out += fmt::format(
        "\nexplanations: {} new operators; {} rewrite steps, {} replayed from their rule's "
        "patterns, {} the checked application of a rule with a C++ or multi-pattern applier{}; "
        "checked: {}\n",
        e.operators.size(), e.check.rule_steps + e.check.trusted_steps, e.check.rule_steps,
        e.check.trusted_steps, trusted.empty() ? "" : " (" + trusted + ")",
        e.check.ok ? "yes" : "NO, " + e.check.error);
    for (std::size_t k = 0; k < e.operators.size(); ++k) {
      const tt::NewOperator& op = e.operators[k];
      const std::string name = std::string(tt::op_name(result.optimized[op.node].op()));
      if (op.original)
        out += fmt::format("  %{} {} = original %{}: {}\n", op.node.index(), name,
                           op.original->index(), e.chain_string(k));
      else if (op.inside)
        out += fmt::format("  %{} {}: a new value, built by the rewrite of %{}\n", op.node.index(),
                           name, op.inside->index());
      else
        out += fmt::format("  %{} {}: a new value\n", op.node.index(), name);
    }
  }
  std::cout << out << std::flush;
  return exit_code;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const Options options = parse_args(argc, argv);
    if (options.help) {
      std::cout << kUsageLine << kHelp;
      return 0;
    }
    if (options.measure) cli::keep_freed_memory();  // as the benches time the executor
    return run(options);
  } catch (const BadInput& e) {
    std::fprintf(stderr, "tensat-opt: %s\n%s", one_line(e.reason).c_str(), kUsageLine);
    return 2;
  } catch (const std::exception& e) {
    std::cout << std::flush;
    std::fprintf(stderr, "tensat-opt: internal error: %s\n", one_line(e.what()).c_str());
    return 1;
  }
}
