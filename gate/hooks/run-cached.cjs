// Loader for the gate's bundled hooks (copied to dist/gate/bundle/ by scripts/bundle-gate.mjs):
// `node run-cached.cjs <bundle.cjs> [args…]` runs the bundle as
// CommonJS with a V8 code cache kept next to it (<bundle>.<node version>.v8cache), so repeated hook
// starts skip parsing and compiling. A missing, stale or rejected cache is rebuilt; a cache that
// cannot be written is skipped. Behaviour is identical to `node <bundle.cjs> [args…]`.
'use strict';
const fs = require('node:fs');
const path = require('node:path');
const vm = require('node:vm');
const Module = require('node:module');

const file = path.resolve(process.argv[2] || '');
process.argv.splice(1, 1); // the bundle sees itself as argv[1], its arguments from argv[2]
const source = fs.readFileSync(file, 'utf8');
const cacheFile = `${file}.${process.version}.v8cache`;
let cachedData;
try {
  cachedData = fs.readFileSync(cacheFile);
} catch {
  cachedData = undefined;
}
const wrapper = `(function (exports, require, module, __filename, __dirname) {${source.replace(/^#!.*/, '')}\n})`;
const script = new vm.Script(wrapper, { filename: file, cachedData });
const mod = new Module(file, module);
mod.filename = file;
mod.paths = Module._nodeModulePaths(path.dirname(file));
const fn = script.runInThisContext();
fn.call(mod.exports, mod.exports, Module.createRequire(file), mod, file, path.dirname(file));
if (cachedData === undefined || script.cachedDataRejected) {
  process.once('beforeExit', () => {
    try {
      const tmp = `${cacheFile}.${process.pid}.tmp`;
      fs.writeFileSync(tmp, script.createCachedData());
      fs.renameSync(tmp, cacheFile);
    } catch {
      // read-only install: run without a cache
    }
  });
}
