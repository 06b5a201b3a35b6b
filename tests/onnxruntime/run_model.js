// Runs an ONNX model on onnxruntime (CPU) for tensat's cross-check tests.
//
//   NODE_PATH=/path/to/node_modules node run_model.js MODEL.onnx INPUTS.json
//
// INPUTS.json: {"NAME": {"dims": [...], "data": [...]}, ...} (float32 inputs). Prints one JSON
// object, {"outputs": {"NAME": {"dims": [...], "data": [...]}, ...}}, in the model's output
// order. Exits 77 (a skip, for ctest) when onnxruntime-node cannot be loaded, 1 on any other
// failure, with the reason on stderr.
'use strict';
const fs = require('fs');

let ort;
try {
  ort = require('onnxruntime-node');
} catch (e) {
  process.stderr.write(`run_model.js: onnxruntime-node is not available (${e.message.split('\n')[0]})\n`);
  process.exit(77);
}

async function main() {
  const [modelPath, inputsPath] = process.argv.slice(2);
  if (!modelPath || !inputsPath) throw new Error('usage: node run_model.js MODEL.onnx INPUTS.json');
  const inputs = JSON.parse(fs.readFileSync(inputsPath, 'utf8'));
  const session = await ort.InferenceSession.create(modelPath, {executionProviders: ['cpu']});
  const feeds = {};
  for (const [name, t] of Object.entries(inputs))
    feeds[name] = new ort.Tensor('float32', Float32Array.from(t.data), t.dims);
  const results = await session.run(feeds);
  const outputs = {};
  for (const name of session.outputNames) {
    const t = results[name];
    if (t.type !== 'float32') throw new Error(`output ${name} has type ${t.type}, not float32`);
    outputs[name] = {dims: Array.from(t.dims, Number), data: Array.from(t.data)};
  }
  process.stdout.write(JSON.stringify({outputs}) + '\n');
}

main().catch((e) => {
  process.stderr.write(`run_model.js: ${e.message}\n`);
  process.exit(1);
});
