// npm run build: dist/kopek, one executable that runs alone (no node_modules, no network).
//
// 1. esbuild bundles src/sea.ts (which runs src/main.ts) into one CommonJS file, with schema.sql inlined.
// 2. node --experimental-sea-config turns it into a SEA blob carrying better-sqlite3's addon (and its JavaScript,
//    bundled for worker threads) as assets.
// 3. postject injects the blob into a copy of this Node binary.
import { build } from 'esbuild';
import { createRequire } from 'node:module';
import { spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);
const root = dirname(fileURLToPath(import.meta.url));
const dist = join(root, 'dist');
const work = join(dist, 'sea');
const bundleFile = join(work, 'kopek.cjs');
const blobFile = join(work, 'kopek.blob');
const configFile = join(work, 'sea-config.json');
const exeFile = join(dist, 'kopek');
// The fuse Node's SEA loader looks for; postject flips it to say a blob is present.
const SEA_FUSE = 'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2';
// Must match ADDON_ASSET and LIB_ASSET in src/sea.ts.
const ADDON_ASSET = 'better_sqlite3.node';
const LIB_ASSET = 'better_sqlite3.js';
const libFile = join(work, 'better-sqlite3.cjs');

/** Serves src/db/schema-text.ts as the text of schema.sql, so the executable needs no file beside it. */
const schemaTextPlugin = {
  name: 'kopek-schema-text',
  setup(b) {
    b.onLoad({ filter: /[\\/]src[\\/]db[\\/]schema-text\.ts$/ }, () => {
      const schemaPath = join(root, 'schema.sql');
      const sql = readFileSync(schemaPath, 'utf8');
      return { contents: `export const SCHEMA_SQL = ${JSON.stringify(sql)};\n`, loader: 'js', watchFiles: [schemaPath] };
    });
  },
};

/**
 * better-sqlite3 falls back to `bindings` only when no addon is passed in. The executable always passes
 * one (src/sea.ts), so `bindings` is replaced by a stub that says so instead of searching the disk.
 */
const noBindingsPlugin = {
  name: 'kopek-no-bindings',
  setup(b) {
    b.onResolve({ filter: /^bindings$/ }, () => ({ path: 'bindings', namespace: 'kopek-stub' }));
    b.onLoad({ filter: /.*/, namespace: 'kopek-stub' }, () => ({
      contents:
        'module.exports = function bindings(name) { throw new Error("cannot load " + JSON.stringify(name) + ": the bundle runs only as the kopek executable, which carries its own SQLite addon"); };',
      loader: 'js',
    }));
  },
};

function fail(message) {
  process.stderr.write(`build: ${message}\n`);
  process.exit(1);
}

function step(label, fn) {
  const t0 = performance.now();
  const out = fn();
  const done = (v) => {
    process.stdout.write(`build: ${label} (${Math.round(performance.now() - t0)} ms)\n`);
    return v;
  };
  return out instanceof Promise ? out.then(done) : done(out);
}

function findAddon() {
  const pkgDir = dirname(require.resolve('better-sqlite3/package.json'));
  const addon = join(pkgDir, 'build', 'Release', 'better_sqlite3.node');
  if (!existsSync(addon)) fail(`cannot find better-sqlite3's native addon at "${addon}"; run npm ci`);
  return addon;
}

async function main() {
  const t0 = performance.now();
  const addon = findAddon();
  rmSync(work, { recursive: true, force: true });
  mkdirSync(work, { recursive: true });

  await step('bundle src/sea.ts with esbuild', () =>
    build({
      entryPoints: [join(root, 'src', 'sea.ts')],
      outfile: bundleFile,
      bundle: true,
      platform: 'node',
      target: 'node20',
      format: 'cjs',
      define: { KOPEK_BUNDLE: 'true' },
      plugins: [schemaTextPlugin, noBindingsPlugin],
      legalComments: 'none',
      logLevel: 'warning',
    }),
  );

  // A worker thread cannot load modules out of the main script, so the checkpoint thread (src/db/checkpointer.ts)
  // gets better-sqlite3's JavaScript as text of its own.
  await step('bundle better-sqlite3 for worker threads', () =>
    build({
      entryPoints: [require.resolve('better-sqlite3')],
      outfile: libFile,
      bundle: true,
      platform: 'node',
      target: 'node20',
      format: 'cjs',
      plugins: [noBindingsPlugin],
      legalComments: 'none',
      logLevel: 'warning',
    }),
  );

  writeFileSync(
    configFile,
    JSON.stringify(
      {
        main: bundleFile,
        output: blobFile,
        disableExperimentalSEAWarning: true,
        useSnapshot: false,
        useCodeCache: true,
        assets: { [ADDON_ASSET]: addon, [LIB_ASSET]: libFile },
      },
      null,
      2,
    ),
  );
  step('write the SEA blob', () => {
    const r = spawnSync(process.execPath, ['--experimental-sea-config', configFile], { cwd: work, encoding: 'utf8' });
    if (r.status !== 0) fail(`cannot write the SEA blob: ${(r.stderr || r.stdout || `exit ${r.status}`).trim()}`);
  });

  const { inject } = require('postject');
  const partial = `${exeFile}.partial`;
  copyFileSync(process.execPath, partial);
  chmodSync(partial, 0o755);
  await step('inject the blob with postject', async () => {
    // postject's ELF reader warns about Node's unnamed note sections on every build; the warning is harmless
    // noise that would hide a real one.
    const warn = console.warn;
    console.warn = (...args) => {
      if (!/^warning: Can't find string offset for section name/.test(String(args[0]))) warn(...args);
    };
    try {
      await inject(partial, 'NODE_SEA_BLOB', readFileSync(blobFile), { sentinelFuse: SEA_FUSE });
    } catch (err) {
      rmSync(partial, { force: true });
      fail(`cannot inject the SEA blob into "${partial}": ${err.message}`);
    } finally {
      console.warn = warn;
    }
  });
  renameSync(partial, exeFile);

  const mb = (statSync(exeFile).size / 1024 / 1024).toFixed(1);
  const s = ((performance.now() - t0) / 1000).toFixed(1);
  process.stdout.write(`build: wrote ${resolve(exeFile)} (${mb} MiB) in ${s} s\n`);
}

main().catch((err) => fail(err.stack || err.message));
