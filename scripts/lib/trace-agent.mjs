// Preloaded into a kopek server by scripts/trace-payment.ts (`node --import THIS ...`): turns on V8's precise
// coverage with call counts before any module of the server loads, and answers the tracer's `take` over the
// IPC channel with the counts since the last take (V8 resets them on every take), for scripts under SRC only.
// Functions that the TypeScript loader writes into each module, rather than the module's own source, are left
// out: its helpers (`__name`, `__export`, `__copyProps`, ... and what they define) and the getters of the
// module's exports (`__export(x_exports, { name: () => name })`), through which every import is read. A bundled
// executable has none of them.
import { Session } from 'node:inspector';
import { pathToFileURL } from 'node:url';

const src = pathToFileURL(process.env.KOPEK_TRACE_SRC ?? '').href.replace(/\/?$/, '/');
const session = new Session();
session.connect();
const post = (method, params) =>
  new Promise((resolve, reject) => session.post(method, params, (err, res) => (err ? reject(err) : resolve(res))));

await post('Debugger.enable');
await post('Profiler.enable');
await post('Profiler.startPreciseCoverage', { callCount: true, detailed: false });

process.on('message', (msg) => {
  if (msg !== 'take') return;
  post('Profiler.takePreciseCoverage').then(async (res) => {
    const scripts = [];
    for (const s of res.result) {
      if (!s.url.startsWith(src)) continue;
      const generated = await loaderRanges(s);
      const ours = (f) => !generated.some(([from, to]) => f.ranges[0].startOffset >= from && f.ranges[0].startOffset < to);
      // The module's own body is the function that starts at offset 0 (CommonJS wrapper or ESM top level).
      const fns = s.functions
        .filter((f) => f.ranges[0].startOffset !== 0 && f.ranges[0].count > 0 && ours(f))
        .map((f) => ({ name: f.functionName, offset: f.ranges[0].startOffset, count: f.ranges[0].count }));
      if (fns.length > 0) scripts.push({ file: s.url.slice(src.length), fns });
    }
    process.send({ scripts });
  });
});
/** The source ranges of a script that the loader wrote: its helpers and the getters of the module's exports. */
const rangesOf = new Map();
async function loaderRanges(script) {
  if (rangesOf.has(script.scriptId)) return rangesOf.get(script.scriptId);
  const ranges = script.functions.filter((f) => f.functionName.startsWith('__')).map((f) => [f.ranges[0].startOffset, f.ranges[0].endOffset]);
  const { scriptSource } = await post('Debugger.getScriptSource', { scriptId: script.scriptId });
  const getters = /__export\(\w+,\s*\{/.exec(scriptSource);
  if (getters) ranges.push([getters.index, scriptSource.indexOf('})', getters.index)]);
  rangesOf.set(script.scriptId, ranges);
  return ranges;
}

// The IPC channel must not keep a server alive that was told to stop.
process.channel?.unref();
