// Preloaded into a kopek server by scripts/trace-payment.ts (`node --import THIS ...`): turns on V8's precise
// coverage with call counts before any module of the server loads, and answers the tracer's `take` over the
// IPC channel with the counts since the last take (V8 resets them on every take), for scripts under SRC only.
import { Session } from 'node:inspector';
import { pathToFileURL } from 'node:url';

const src = pathToFileURL(process.env.KOPEK_TRACE_SRC ?? '').href.replace(/\/?$/, '/');
const session = new Session();
session.connect();
const post = (method, params) =>
  new Promise((resolve, reject) => session.post(method, params, (err, res) => (err ? reject(err) : resolve(res))));

await post('Profiler.enable');
await post('Profiler.startPreciseCoverage', { callCount: true, detailed: false });

process.on('message', (msg) => {
  if (msg !== 'take') return;
  post('Profiler.takePreciseCoverage').then((res) => {
    const scripts = [];
    for (const s of res.result) {
      if (!s.url.startsWith(src)) continue;
      // The module's own body is the function that starts at offset 0 (CommonJS wrapper or ESM top level).
      const fns = s.functions
        .filter((f) => f.ranges[0].startOffset !== 0 && f.ranges[0].count > 0)
        .map((f) => ({ name: f.functionName, offset: f.ranges[0].startOffset, count: f.ranges[0].count }));
      if (fns.length > 0) scripts.push({ file: s.url.slice(src.length), fns });
    }
    process.send({ scripts });
  });
});
// The IPC channel must not keep a server alive that was told to stop.
process.channel?.unref();
