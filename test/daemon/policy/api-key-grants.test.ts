// policy.api_key_envs: NAME lets a key go to any base_url, NAME=URL only at or under URL (same
// origin, path within), so a client cannot send an allowed key to a server of its own.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadConfig } from '../../../daemon/config/load.js';
import { grantProblem, keyRefusal, parseGrants } from '../../../daemon/policy/providers/api-key-grants.js';
import { makeProvider, type ProviderParams } from '../../../daemon/policy/episode/provider-spec.js';
import type { ChatService } from '../../../daemon/engine/chat-service.js';

test('a bound key goes only to base URLs at or under its URL', () => {
  const g = parseGrants([
    'OPENAI_API_KEY=https://api.openai.com/v1',
    'LOCAL_KEY',
    'TWO=http://a.lan:8080/v1',
    'TWO=http://b.lan/',
  ]);
  const ok = (env: string, url: string) => assert.equal(keyRefusal(g, env, url), null, `${env} → ${url}`);
  const no = (env: string, url: string, why: RegExp) =>
    assert.match(keyRefusal(g, env, url) ?? '', why, `${env} → ${url}`);
  ok('OPENAI_API_KEY', 'https://api.openai.com/v1');
  ok('OPENAI_API_KEY', 'https://api.openai.com/v1/');
  ok('OPENAI_API_KEY', 'https://api.openai.com/v1/org/x');
  no(
    'OPENAI_API_KEY',
    'https://api.openai.com.evil.net/v1',
    /may only be sent to https:\/\/api\.openai\.com\/v1 .*not to https:\/\/api\.openai\.com\.evil\.net\/v1/,
  );
  no('OPENAI_API_KEY', 'http://api.openai.com/v1', /not to http:\/\/api\.openai\.com\/v1/);
  no('OPENAI_API_KEY', 'https://api.openai.com/v10', /not to/);
  no('OPENAI_API_KEY', 'https://api.openai.com:8443/v1', /not to/);
  ok('LOCAL_KEY', 'http://anything.example/v1');
  ok('TWO', 'http://a.lan:8080/v1');
  ok('TWO', 'http://b.lan/v1');
  no('TWO', 'http://a.lan/v1', /may only be sent to http:\/\/a\.lan:8080\/v1 or http:\/\/b\.lan\//);
  no('HOME', 'http://b.lan/v1', /must be one of policy\.api_key_envs \(OPENAI_API_KEY, LOCAL_KEY, TWO\), got "HOME"/);
});

test('malformed api_key_envs entries are refused when the config loads, naming the entry', () => {
  assert.equal(grantProblem('OPENAI_API_KEY'), undefined);
  assert.equal(grantProblem('OPENAI_API_KEY=https://api.openai.com/v1'), undefined);
  assert.match(grantProblem('1BAD') ?? '', /NAME or NAME=URL/);
  assert.match(grantProblem('K=ftp://x/v1') ?? '', /URL after "=" must be an http\(s\) URL/);
  assert.match(grantProblem('K=https://u:p@x/v1') ?? '', /must not hold a user name or password/);
  assert.throws(
    () => loadConfig({ env: {}, overrides: { policy: { api_key_envs: ['OK', 'K=not a url'] } } }),
    /policy\.api_key_envs\[1\].*URL after "=" must be an http\(s\) URL/s,
  );
});

test('policy.start with a bound key and a base_url elsewhere is refused before any request', async (t) => {
  process.env.BS_TEST_GRANT_KEY = 'sk-test';
  t.after(() => delete process.env.BS_TEST_GRANT_KEY);
  const chat = {} as ChatService;
  const grants = ['BS_TEST_GRANT_KEY=https://api.openai.com/v1'];
  const spec = (base_url: string) =>
    ({ kind: 'openai', base_url, model: 'm', api_key_env: 'BS_TEST_GRANT_KEY' }) as ProviderParams;
  await assert.rejects(
    makeProvider(spec('https://collector.example/v1'), { chat, episode: 'ep', apiKeyEnvs: grants }),
    /provider\.api_key_env: BS_TEST_GRANT_KEY may only be sent to https:\/\/api\.openai\.com\/v1/,
  );
  const allowed = await makeProvider(spec('https://api.openai.com/v1'), { chat, episode: 'ep', apiKeyEnvs: grants });
  assert.equal(allowed.name, 'openai');
});
