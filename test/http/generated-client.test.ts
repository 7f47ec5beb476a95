import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import openapiTS, { astToString } from 'openapi-typescript';
import ts from 'typescript';
import { startTestServer, type TestServer } from '../helpers/server';
import { checkResponse } from '../helpers/openapi-check';

// What a merchant's developer does on day one: generate types from the served document with openapi-typescript,
// write a client with openapi-fetch, type-check it with tsc and run the README's walk with it.

const ROOT = join(__dirname, '..', '..');
let s: TestServer;
let dir: string;

before(async () => {
  s = await startTestServer();
  // Inside the project, so the client resolves openapi-fetch from node_modules as an integrator's would.
  mkdirSync(join(ROOT, '.artifacts'), { recursive: true });
  dir = mkdtempSync(join(ROOT, '.artifacts', 'generated-client-'));
});
after(async () => {
  await s.close();
  rmSync(dir, { recursive: true, force: true });
});

/** The README's walk (create, pay through the test helpers, read, list, refund, a refused cancel), typed by the generated paths. */
const CLIENT = `import createClient from 'openapi-fetch';
import type { paths } from './kopek-api';

export async function walk(baseUrl: string, key: string, onAnswer: (method: string, path: string, status: number, body: unknown) => void) {
  const client = createClient<paths>({ baseUrl, headers: { Authorization: \`Bearer \${key}\` } });
  client.use({ async onResponse({ request, response }) {
    const body = response.headers.get('content-type')?.startsWith('application/json') ? await response.clone().json() : undefined;
    onAnswer(request.method, new URL(request.url).pathname, response.status, body);
  } });
  // The first request of the README: no ttl_minutes, method or currency (they have defaults).
  const created = await client.POST('/v1/public/payments', {
    params: { header: { 'Idempotency-Key': 'order-1001' } },
    body: { amount: 150000, order_id: '1001', description: 'Tea, 3 packs', return_url: 'https://shop.example/done' },
  });
  if (!created.data) throw new Error('create failed: ' + JSON.stringify(created.error));
  const id: string = created.data.payment.id;
  await client.POST('/v1/test/payments/{id}/simulate', { params: { path: { id } }, body: { action: 'open_session', method: 'sbp' } });
  await client.POST('/v1/test/clock/advance', { body: { seconds: 3 } });
  const read = await client.GET('/v1/public/payments/{id}', { params: { path: { id } } });
  const list = await client.GET('/v1/public/payments', { params: { query: { limit: 2, status: 'succeeded,refunded' } } });
  const refund = await client.POST('/v1/public/payments/{id}/refund', { params: { path: { id } }, body: { amount: 50000, reason: 'one pack returned' } });
  const cancel = await client.POST('/v1/public/payments/{id}/cancel', { params: { path: { id } } });
  const refusal: string | undefined = cancel.error?.error.code;
  return {
    id,
    status: read.data?.status,
    listed: list.data?.items.map((p) => p.id) ?? [],
    refund: refund.data ? { amount: refund.data.amount, status: refund.data.status } : null,
    refusal: { status: cancel.response.status, code: refusal },
  };
}
`;

/** tsc over `files` with the project's strictness; the diagnostics as text, one per line. */
function typeCheck(files: string[]): string[] {
  const program = ts.createProgram(files, {
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.ESNext,
    moduleResolution: ts.ModuleResolutionKind.Bundler,
    lib: ['lib.es2023.d.ts', 'lib.dom.d.ts'],
    types: [],
    strict: true,
    noEmit: true,
    skipLibCheck: true,
  });
  return ts.getPreEmitDiagnostics(program).map((d) => {
    const where = d.file ? `${d.file.fileName.slice(dir.length + 1)}:${d.file.getLineAndCharacterOfPosition(d.start ?? 0).line + 1}: ` : '';
    return where + ts.flattenDiagnosticMessageText(d.messageText, '\n');
  });
}

test('types generated from the served document type-check a client that runs the README walk against a real server', async () => {
  const served = await s.request('GET', '/v1/openapi.json');
  assert.equal(served.status, 200);
  writeFileSync(join(dir, 'kopek-api.ts'), astToString(await openapiTS(served.body)));
  writeFileSync(join(dir, 'client.ts'), CLIENT);
  assert.deepEqual(typeCheck([join(dir, 'client.ts')]), []);

  const answers: string[] = [];
  const { walk } = (await import(join(dir, 'client.ts'))) as { walk: (u: string, k: string, on: (m: string, p: string, st: number, b: unknown) => void) => Promise<any> };
  const r = await walk(s.url, s.demo.key, (method, path, status, body) => {
    answers.push(`${method} ${status}`);
    checkResponse(method, path, status, body);
  });
  assert.equal(r.status, 'succeeded');
  assert.deepEqual(r.listed, [r.id]);
  assert.deepEqual(r.refund, { amount: 50000, status: 'pending' });
  assert.deepEqual(r.refusal, { status: 409, code: 'invalid_state' });
  assert.deepEqual(answers, ['POST 201', 'POST 200', 'POST 200', 'GET 200', 'GET 200', 'POST 201', 'POST 409']);
});

test("the README's openapi-fetch example type-checks against the generated types", async () => {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const example = /```ts\n(import createClient from 'openapi-fetch';[\s\S]*?)```/.exec(readme);
  assert.ok(example, 'README.md has no openapi-fetch example');
  const served = await s.request('GET', '/v1/openapi.json');
  writeFileSync(join(dir, 'kopek-api.ts'), astToString(await openapiTS(served.body)));
  // The example reads its base URL and key from the environment; the check compiles without Node's types.
  writeFileSync(join(dir, 'readme.ts'), `declare const process: { env: Record<string, string | undefined> };\n${example[1]}`);
  assert.deepEqual(typeCheck([join(dir, 'readme.ts')]), []);
});

test('the same check refuses a client that breaks the document (the type-check is real)', async () => {
  const served = await s.request('GET', '/v1/openapi.json');
  writeFileSync(join(dir, 'kopek-api.ts'), astToString(await openapiTS(served.body)));
  writeFileSync(
    join(dir, 'wrong.ts'),
    `import createClient from 'openapi-fetch';
import type { paths } from './kopek-api';
const client = createClient<paths>({ baseUrl: 'http://127.0.0.1' });
void client.POST('/v1/public/payments', { body: { amount: '150000' } });
void client.POST('/v1/public/payments', { body: { order_id: 'no amount' } });
void client.GET('/v1/public/payments/{id}', { params: { path: { id: 1 } } });
`,
  );
  const errors = typeCheck([join(dir, 'wrong.ts')]);
  assert.equal(errors.length, 3, errors.join('\n'));
  assert.ok(errors.every((e) => e.startsWith('wrong.ts:')), errors.join('\n'));
});

test('every operation has its own operationId and declares its refusals; defaulted fields are optional in the create body', async () => {
  const doc = (await s.request('GET', '/v1/openapi.json')).body;
  const ids = new Set<string>();
  for (const [path, ops] of Object.entries(doc.paths as Record<string, Record<string, any>>)) {
    for (const [method, op] of Object.entries(ops)) {
      assert.match(op.operationId ?? '', /^[a-z][A-Za-z0-9]+$/, `${method} ${path}`);
      assert.ok(!ids.has(op.operationId), `operationId ${op.operationId} twice`);
      ids.add(op.operationId);
      if ((op.security ?? doc.security).length > 0) for (const st of ['401', '403', '429']) assert.ok(op.responses[st], `${method} ${path} declares ${st}`);
      if (path.includes('{')) assert.ok(op.responses['404'], `${method} ${path} declares 404`);
    }
  }
  const create = doc.paths['/v1/public/payments'].post;
  assert.equal(create.operationId, 'createPayment');
  const body = create.requestBody.content['application/json'].schema;
  assert.deepEqual(body.required, ['amount']);
  assert.equal(body.properties.ttl_minutes.default, 60);
  const stream = doc.paths['/v1/public/events'].get;
  assert.ok(stream.parameters.some((p: any) => p.name === 'Last-Event-ID' && p.in === 'header'));
});
