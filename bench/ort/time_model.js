// Times ONNX models in onnxruntime-node on the CPU: one intra-op and one inter-op thread,
// sequential execution, at graph optimization levels 'all' (ORT_ENABLE_ALL) and 'disabled'.
//
//   NODE_PATH=/path/to/node_modules node time_model.js [options] ORIGINAL.onnx [OPTIMIZED.onnx]
//
// Options:
//   --input NAME=d0,d1,...  the shape of input NAME (fixes its symbolic dimensions; repeatable);
//                           inputs not named take their declared shape, a symbolic dimension 1
//   --runs N                timed runs (pairs of runs with two models; default 21)
//   --warmup W              untimed runs of each model first (default 3)
//   --levels L1,L2          optimization levels (default all,disabled)
//   --seed S                seed of the random inputs (default 1)
//   --dump DIR              also write onnxruntime's optimized graph of each model and level there
//
// With one model: its median run time per level. With a pair: the runs alternate A B, B A, ...
// (which model goes first flips every pair, to cancel drift and cache order); per level, the
// medians, the speedup of B over A (median A / median B), the median and interquartile range of
// the per-pair ratios tA/tB, and a two-sided sign test over the pairs: "faster" or "slower"
// when B wins or loses significantly more pairs than chance (p < 0.05), else "within noise".
// Both models get the same random float32 inputs (uniform in [-1, 1)). Prints one JSON object.
// Exit status: 0, 2 on bad arguments or a model that cannot be loaded, 77 when onnxruntime-node
// is not available.
'use strict';
const fs = require('fs');
const path = require('path');

let ort;
try {
  ort = require('onnxruntime-node');
} catch (e) {
  process.stderr.write(`time_model.js: onnxruntime-node is not available (${e.message.split('\n')[0]})\n`);
  process.exit(77);
}

class BadInput extends Error {}

function parseArgs(argv) {
  const o = {shapes: {}, runs: 21, warmup: 3, levels: ['all', 'disabled'], seed: 1, dump: null, models: []};
  const positive = (name, v, min) => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < min) throw new BadInput(`${name} needs an integer >= ${min}, got '${v}'`);
    return n;
  };
  for (let i = 0; i < argv.length; ++i) {
    const a = argv[i];
    const value = () => {
      if (i + 1 >= argv.length) throw new BadInput(`${a} needs a value`);
      return argv[++i];
    };
    if (a === '--input') {
      const v = value();
      const eq = v.indexOf('=');
      if (eq <= 0) throw new BadInput(`--input needs NAME=d0,d1,..., got '${v}'`);
      const dims = v.slice(eq + 1) === '' ? [] : v.slice(eq + 1).split(',').map((d) => positive('--input', d, 1));
      o.shapes[v.slice(0, eq)] = dims;
    } else if (a === '--runs') o.runs = positive(a, value(), 1);
    else if (a === '--warmup') o.warmup = positive(a, value(), 0);
    else if (a === '--seed') o.seed = positive(a, value(), 0);
    else if (a === '--dump') o.dump = value();
    else if (a === '--levels') {
      o.levels = value().split(',');
      for (const l of o.levels)
        if (!['disabled', 'basic', 'extended', 'all'].includes(l)) throw new BadInput(`unknown level '${l}'`);
    } else if (a.startsWith('--')) throw new BadInput(`unknown option ${a}`);
    else o.models.push(a);
  }
  if (o.models.length < 1 || o.models.length > 2) throw new BadInput('give one model, or a pair ORIGINAL OPTIMIZED');
  return o;
}

// A small deterministic generator (mulberry32), so that runs are reproducible.
function random(seed) {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function feedsFor(session, shapes, seed) {
  const next = random(seed);
  const feeds = {};
  for (const meta of session.inputMetadata) {
    if (!meta.isTensor || meta.type !== 'float32')
      throw new BadInput(`input ${meta.name} is not a float32 tensor (${meta.type}): not supported`);
    const dims = shapes[meta.name] || meta.shape.map((d) => (typeof d === 'number' && d > 0 ? d : 1));
    const n = dims.reduce((a, b) => a * b, 1);
    const data = new Float32Array(n);
    for (let k = 0; k < n; ++k) data[k] = 2 * next() - 1;
    feeds[meta.name] = new ort.Tensor('float32', data, dims);
  }
  return feeds;
}

async function open(model, level, dump) {
  const options = {
    executionProviders: ['cpu'],
    intraOpNumThreads: 1,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: level,
  };
  if (dump) {
    fs.mkdirSync(dump, {recursive: true});
    options.optimizedModelFilePath = path.join(dump, `${path.basename(model, '.onnx')}.${level}.onnx`);
  }
  try {
    return await ort.InferenceSession.create(model, options);
  } catch (e) {
    throw new BadInput(`cannot load ${model}: ${e.message.split('\n')[0]}`);
  }
}

async function timeRun(session, feeds) {
  const start = process.hrtime.bigint();
  await session.run(feeds);
  return Number(process.hrtime.bigint() - start) / 1e3;  // microseconds
}

function quantile(sorted, q) {
  const pos = (sorted.length - 1) * q;
  const lo = Math.floor(pos), hi = Math.ceil(pos);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo);
}
const sorted = (xs) => [...xs].sort((a, b) => a - b);
const median = (xs) => quantile(sorted(xs), 0.5);

// Two-sided sign test: P(a split at least as uneven as `wins` of `n` under p = 1/2).
function signTest(wins, n) {
  if (n === 0) return 1;
  const k = Math.min(wins, n - wins);
  let logC = 0, tail = 0;  // sum_{i<=k} C(n,i) / 2^n, in logs for large n
  for (let i = 0; i <= k; ++i) {
    if (i > 0) logC += Math.log(n - i + 1) - Math.log(i);
    tail += Math.exp(logC - n * Math.LN2);
  }
  return Math.min(1, 2 * tail);
}

async function timeLevel(o, level) {
  const sessions = [];
  for (const m of o.models) sessions.push(await open(m, level, o.dump));
  const feeds = feedsFor(sessions[0], o.shapes, o.seed);
  for (const s of sessions)
    for (let w = 0; w < o.warmup; ++w) await s.run(feeds);
  const times = sessions.map(() => []);
  for (let r = 0; r < o.runs; ++r) {
    const order = sessions.length === 2 && r % 2 === 1 ? [1, 0] : sessions.map((_, k) => k);
    for (const k of order) times[k].push(await timeRun(sessions[k], feeds));
  }
  for (const s of sessions) await s.release();
  const out = {level, median_us: times.map(median)};
  if (sessions.length === 2) {
    const ratios = times[0].map((a, r) => a / times[1][r]);  // > 1: B faster
    const s = sorted(ratios);
    const faster = ratios.filter((x) => x > 1).length;
    const slower = ratios.filter((x) => x < 1).length;
    const p = signTest(faster, faster + slower);
    out.speedup = out.median_us[0] / out.median_us[1];
    out.pair_ratio_median = quantile(s, 0.5);
    out.pair_ratio_iqr = [quantile(s, 0.25), quantile(s, 0.75)];
    out.pairs_faster = faster;
    out.pairs_slower = slower;
    out.sign_test_p = p;
    out.verdict = p >= 0.05 ? 'within noise' : faster > slower ? 'faster' : 'slower';
  }
  return out;
}

async function main() {
  const o = parseArgs(process.argv.slice(2));
  const result = {models: o.models, runs: o.runs, warmup: o.warmup, threads: 1, ort_version: ort.env.versions ? ort.env.versions.common : undefined, levels: []};
  for (const level of o.levels) result.levels.push(await timeLevel(o, level));
  process.stdout.write(JSON.stringify(result) + '\n');
}

main().catch((e) => {
  process.stderr.write(`time_model.js: ${e.message}\n`);
  process.exit(e instanceof BadInput ? 2 : 1);
});
