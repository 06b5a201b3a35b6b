// Times onnxruntime's CPU kernels on the micro-graphs of make_micro.py and writes them as
// calibrate_device.h's DeviceMeasurements JSON, which `calibrate_device --from` fits into a
// profile (bench/ort/README.md):
//
//   NODE_PATH=/path/to/node_modules node measure.js MICRO_DIR OUT.json [--runs N] [--device NAME]
//
// One intra-op and one inter-op thread, graph optimization level 'all' (what the bench times).
// Per kernel, the chains of N and 2N kernels are run alternately (--runs pairs, default 41, after
// 5 warm-up runs each); one kernel's time is (median(2N) - median(N)) / N, so the session's
// fixed costs cancel. A kernel whose two chains take no different time is measured again, and
// after three tries is an error (exit 1).
// Exit status 2 on bad arguments, 77 when onnxruntime-node is not available.
'use strict';
const fs = require('fs');
const path = require('path');

let ort;
try {
  ort = require('onnxruntime-node');
} catch (e) {
  process.stderr.write(`measure.js: onnxruntime-node is not available (${e.message.split('\n')[0]})\n`);
  process.exit(77);
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const h = (s.length - 1) / 2;
  return (s[Math.floor(h)] + s[Math.ceil(h)]) / 2;
};

async function open(file) {
  return ort.InferenceSession.create(file, {executionProviders: ['cpu'], intraOpNumThreads: 1, interOpNumThreads: 1,
                                            executionMode: 'sequential', graphOptimizationLevel: 'all'});
}

async function kernelSeconds(dir, k, runs) {
  const sessions = [await open(path.join(dir, `${k.key}.n.onnx`)), await open(path.join(dir, `${k.key}.2n.onnx`))];
  const n = k.shape.reduce((a, b) => a * b, 1);
  const data = new Float32Array(n);
  for (let i = 0; i < n; ++i) data[i] = Math.sin(i) * 0.5;
  const feeds = {x: new ort.Tensor('float32', data, k.shape)};
  for (const s of sessions)
    for (let w = 0; w < 5; ++w) await s.run(feeds);
  const times = [[], []];
  for (let r = 0; r < runs; ++r)
    for (const i of r % 2 ? [1, 0] : [0, 1]) {
      const start = process.hrtime.bigint();
      await sessions[i].run(feeds);
      times[i].push(Number(process.hrtime.bigint() - start) * 1e-9);
    }
  for (const s of sessions) await s.release();
  const t = (median(times[1]) - median(times[0])) / k.n;
  if (!(t > 0)) throw new Error(`${k.what}: the chain of ${2 * k.n} took no longer than that of ${k.n}`);
  return t;
}

async function main() {
  const args = process.argv.slice(2);
  let runs = 41, device = 'onnxruntime-node CPU, one thread';
  const positional = [];
  for (let i = 0; i < args.length; ++i) {
    if (args[i] === '--runs' && i + 1 < args.length) runs = Number(args[++i]);
    else if (args[i] === '--device' && i + 1 < args.length) device = args[++i];
    else positional.push(args[i]);
  }
  if (positional.length !== 2 || !Number.isInteger(runs) || runs < 1) {
    process.stderr.write('usage: node measure.js MICRO_DIR OUT.json [--runs N] [--device NAME]\n');
    process.exit(2);
  }
  const [dir, out] = positional;
  const manifest = JSON.parse(fs.readFileSync(path.join(dir, 'manifest.json'), 'utf8'));
  const m = {device, kernel_seconds: 0, bandwidth: 0, depthwise: null, grouped: null,
             grouped_rows: manifest.grouped_rows, products: [], convolutions: []};
  for (const k of manifest.kernels) {
    // A busy machine can hide the difference: measured again, up to three times.
    let seconds = 0;
    for (let attempt = 1; !(seconds > 0); ++attempt) {
      try {
        seconds = await kernelSeconds(dir, k, runs);
      } catch (e) {
        if (attempt === 3) throw e;
      }
    }
    const sample = {what: k.what, flops: k.flops, seconds};
    process.stderr.write(`${k.what}: ${(seconds * 1e6).toFixed(2)} us\n`);
    if (k.role === 'kernel') m.kernel_seconds = seconds;
    else if (k.role === 'bandwidth') m.bandwidth = 12 * k.shape.reduce((a, b) => a * b, 1) / seconds;
    else if (k.role === 'depthwise' || k.role === 'grouped') m[k.role] = sample;
    else m[k.role].push(sample);
  }
  fs.writeFileSync(out, JSON.stringify(m, null, 2) + '\n');
}

main().catch((e) => {
  process.stderr.write(`measure.js: ${e.message}\n`);
  process.exit(1);
});
