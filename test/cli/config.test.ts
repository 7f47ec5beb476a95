import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadConfig, defaultConfig } from '../../src/platform/config';

test('defaults: port 8080, ./data/kopek.db, demo on, 1 MiB body limit', () => {
  const c = loadConfig([], {});
  assert.equal(c.port, 8080);
  assert.equal(c.db, './data/kopek.db');
  assert.equal(c.demo, true);
  assert.equal(c.bodyLimitBytes, 1_048_576);
  assert.deepEqual(c, defaultConfig());
});

test('KOPEK_* variables set options; flags win over them', () => {
  const env = { KOPEK_PORT: '9000', KOPEK_TRUST_PROXY: 'yes', KOPEK_WEBHOOK_ALLOW: '10.0.0.0/8, 192.168.0.0/16', KOPEK_DEMO: 'off' };
  const c = loadConfig(['--port', '9100'], env);
  assert.equal(c.port, 9100);
  assert.equal(c.trustProxy, true);
  assert.equal(c.demo, false);
  assert.deepEqual(c.webhookAllow, ['10.0.0.0/8', '192.168.0.0/16']);
  assert.equal(loadConfig(['--demo'], env).demo, true);
  assert.equal(loadConfig(['--no-trust-proxy'], env).trustProxy, false);
});

test('--flag=value and --flag value both work; URLs lose their trailing slash', () => {
  const c = loadConfig(['--sim-delay=0.5', '--base-url', 'https://pay.example.com/'], {});
  assert.equal(c.simDelaySeconds, 0.5);
  assert.equal(c.baseUrl, 'https://pay.example.com');
});

test('bad values are one-line errors naming the option and quoting the value', () => {
  const cases: Array<[string[], Record<string, string>, RegExp]> = [
    [['--port', '70000'], {}, /--port must be at most 65535, got 70000/],
    [['--port', '-1'], {}, /--port must be a whole number, got "-1"/],
    [[], { KOPEK_PORT: 'x' }, /KOPEK_PORT must be a whole number, got "x"/],
    [['--trust-proxy=maybe'], {}, /--trust-proxy must be true or false, got "maybe"/],
    [['--log-level', 'loud'], {}, /--log-level must be one of/],
    [['--base-url', 'ftp://x'], {}, /--base-url must be an http\(s\) URL, got "ftp:\/\/x"/],
    [['--bogus'], {}, /unknown option "--bogus"/],
    [['--no-port'], {}, /unknown option "--no-port"/],
    [['--port'], {}, /option --port needs a value/],
    [['--body-limit', '0'], {}, /--body-limit must be at least 1 byte/],
    [['--rate-burst', '0'], {}, /--rate-burst must be at least 1/],
    [['--job-lease', '0'], {}, /--job-lease must be more than 0 seconds, got 0/],
    [['--db-pool', '0'], {}, /--db-pool must be 1 to 1000, got 0/],
    [['--db-pool', '5000'], {}, /--db-pool must be 1 to 1000, got 5000/],
    [[], { KOPEK_DB_POOL: 'many' }, /KOPEK_DB_POOL must be a whole number, got "many"/],
    [['--sim-delay', '-2'], {}, /--sim-delay must be a non-negative number, got "-2"/],
  ];
  for (const [argv, env, re] of cases) {
    assert.throws(() => loadConfig(argv, env), (err: Error) => re.test(err.message) && !err.message.includes('\n'), argv.join(' '));
  }
});

test('strict parsing: the last of two flags wins, a switch takes its variable spelling, nonsense is refused', () => {
  assert.equal(loadConfig(['--port', '1', '--port=2'], {}).port, 2);
  assert.equal(loadConfig(['--no-demo', '--demo'], {}).demo, true);
  assert.equal(loadConfig(['--demo', '--no-demo'], {}).demo, false);
  assert.equal(loadConfig(['--demo=off'], {}).demo, false);
  assert.equal(loadConfig(['--trust-proxy=yes'], {}).trustProxy, true);
  const cases: Array<[string[], RegExp]> = [
    [['--no-demo=x'], /^Error: option --no-demo takes no value$/],
    [['--host', '--port', '80'], /^Error: option --host needs a value$/],
    [['-p', '80'], /^Error: unknown option "-p"$/],
    [['serve'], /^Error: unknown option "serve"$/],
    [['--', '--port'], /^Error: unknown option "--port"$/],
  ];
  for (const [argv, re] of cases) assert.throws(() => loadConfig(argv, {}), re, argv.join(' '));
});
