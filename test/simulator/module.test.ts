import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { PaymentsCore } from '../../src/money/payments/core';
import { simulatorModule } from '../../src/banks/simulator/test-bank';
import { tbankModule } from '../../src/banks/tbank/bank';
import { TEST_PROVIDER } from '../../src/money/bank-port/directory';
import { TBANK } from '../../src/banks/tbank/protocol';

/**
 * A core whose services record any use: building a bank module must only read the configuration, never
 * register, schedule, write or add a closer (mountModules does the registering).
 */
function inertCore(): { core: PaymentsCore; used: string[] } {
  const used: string[] = [];
  const service = (name: string): unknown =>
    new Proxy(
      {},
      {
        get: (_t, key) => {
          used.push(`${name}.${String(key)}`);
          return () => undefined;
        },
      },
    );
  const core = {
    config: { db: '/nonexistent/kopek.db', simDelaySeconds: 2, acquirerTimeoutSeconds: 10, webhookAllow: [] },
    log: service('log'),
    store: service('store'),
    clocks: service('clocks'),
    scheduler: service('scheduler'),
    events: service('events'),
    banks: service('banks'),
    paymentHooks: service('paymentHooks'),
    version: 'test',
    closing: false,
    baseUrl: () => 'http://api.example',
    payPageUrl: () => 'http://pay.example',
  };
  return { core: core as unknown as PaymentsCore, used };
}

test('simulatorModule only builds: the test bank and its three answer jobs, nothing registered', () => {
  const { core, used } = inertCore();
  const m = simulatorModule(core);
  assert.deepEqual(used, []);
  assert.equal(m.name, 'simulator');
  assert.deepEqual(m.banks?.map((b) => b.provider), [TEST_PROVIDER]);
  // The kinds are the ones databases hold: renaming one would strand the jobs already written.
  assert.deepEqual(m.jobs?.map((j) => j.kind), ['simulator.payment_resolve', 'refund.settle', 'payout.settle']);
  assert.ok(m.jobs?.every((j) => 'run' in j));
});

test('tbankModule only builds: the connector, its request job (async) and its refusal job, nothing registered', () => {
  const { core, used } = inertCore();
  const m = tbankModule(core);
  assert.deepEqual(used, []);
  assert.equal(m.name, 'tbank');
  assert.deepEqual(m.banks?.map((b) => [b.provider, b.sendsPayouts]), [[TBANK, false]]);
  assert.deepEqual(m.jobs?.map((j) => j.kind), ['tbank.request', 'tbank.refuse']);
  const request = m.jobs![0];
  assert.ok('async' in request);
  // The job allows the request's own timeout and a margin, so the request's unknown is what it records.
  assert.equal(request.async.deadline_ms, 15_000);
  assert.ok('run' in m.jobs![1]);
});
