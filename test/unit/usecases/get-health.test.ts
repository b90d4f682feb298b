import { DynamoDBDocumentClient, GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { DATA_MODEL_VERSION } from '#core/data-model';
import { healthHttpStatus, overallStatus, SWEEPER_MISSED_PERIODS, sweeperCheck } from '#core/health';
import { findOperation, scheduleEverySeconds } from '#lib/operations';
import type { HttpResult } from '#shared/envelope';
import { getHealth } from '#usecases/get-health';
import { apiEvent, lambdaContext } from '../support/fixtures.ts';

// GET /health: one GetItem of the sweeper's cursor says whether the table answers and when the
// sweeper last ran; the worst check is the whole (IETF health check shape).

const ddb = mockClient(DynamoDBDocumentClient);
const NOW = new Date('2030-06-10T09:30:00.000Z');
const EVERY = 60;
const cursorWith = (item: Record<string, unknown> | undefined) =>
  ddb.on(GetCommand, { Key: { pk: 'SWEEP', sk: 'CURSOR' } }).resolves({ Item: item });
const health = () =>
  getHealth({ now: () => NOW, sweeperEverySeconds: EVERY, version: '1.0.0', commit: 'abc123' });

beforeEach(() => ddb.reset());

describe('sweeperCheck', () => {
  it(`passes within ${SWEEPER_MISSED_PERIODS} periods, fails past them, warns before the first sweep`, () => {
    const t = NOW.getTime();
    expect(sweeperCheck(t - 3 * EVERY * 1000, t, EVERY)).toMatchObject({
      status: 'pass',
      observedValue: 180,
      observedUnit: 's',
    });
    expect(sweeperCheck(t - 3 * EVERY * 1000 - 1000, t, EVERY)).toMatchObject({
      status: 'fail',
      output: 'the schedule sweeper last ran 181 s ago (it runs every 60 s)',
    });
    expect(sweeperCheck(null, t, EVERY)).toMatchObject({ status: 'warn' });
    // The local stack's 1 s sweeper: 3 s without a sweep is a stopped scheduler there.
    expect(sweeperCheck(t - 4000, t, 1).status).toBe('fail');
  });

  it('the worst check is the whole; fail is 503, warn and pass are 200', () => {
    const pass = { componentType: 'component', status: 'pass' } as const;
    expect(overallStatus({ a: [pass], b: [pass] })).toBe('pass');
    expect(overallStatus({ a: [pass], b: [{ ...pass, status: 'warn' }] })).toBe('warn');
    expect(overallStatus({ a: [{ ...pass, status: 'fail' }], b: [{ ...pass, status: 'warn' }] })).toBe(
      'fail',
    );
    expect([healthHttpStatus('pass'), healthHttpStatus('warn'), healthHttpStatus('fail')]).toEqual([
      200, 200, 503,
    ]);
  });
});

describe('getHealth', () => {
  it('pass: the table answered and the sweeper ran a minute ago; names the release and commit', async () => {
    cursorWith({
      pk: 'SWEEP',
      sk: 'CURSOR',
      through: NOW.getTime() + 60_000,
      swept_at: NOW.getTime() - 60_000,
    });
    const report = await health();
    expect(report).toMatchObject({ status: 'pass', version: '1.0.0', releaseId: 'abc123' });
    expect(report.checks['dynamodb:table']).toEqual([
      {
        componentType: 'datastore',
        status: 'pass',
        time: NOW.toISOString(),
        observedValue: expect.any(Number),
        observedUnit: 'ms',
      },
    ]);
    expect(report.checks['sweeper:lastRun']).toEqual([
      {
        componentType: 'component',
        status: 'pass',
        time: '2030-06-10T09:29:00.000Z',
        observedValue: 60,
        observedUnit: 's',
      },
    ]);
    expect(ddb.commandCalls(GetCommand)).toHaveLength(1);
  });

  it('fail: the sweeper stopped ten minutes ago', async () => {
    cursorWith({ through: NOW.getTime(), swept_at: NOW.getTime() - 600_000 });
    const report = await health();
    expect(report.status).toBe('fail');
    expect(report.checks['sweeper:lastRun']?.[0]).toMatchObject({ status: 'fail', observedValue: 600 });
    expect(report.checks['dynamodb:table']?.[0]?.status).toBe('pass');
  });

  it('warn: no sweep recorded yet (a new table, or a cursor an older Herald wrote without swept_at)', async () => {
    cursorWith({ through: NOW.getTime() });
    expect((await health()).status).toBe('warn');
    ddb.reset();
    cursorWith(undefined);
    expect((await health()).status).toBe('warn');
  });

  it('fail: the table does not answer; says what it answered and nothing else', async () => {
    const err = Object.assign(new Error('Requested resource not found'), {
      name: 'ResourceNotFoundException',
    });
    ddb.on(GetCommand).rejects(err);
    const report = await health();
    expect(report.status).toBe('fail');
    expect(report.checks['dynamodb:table']?.[0]).toMatchObject({
      status: 'fail',
      output: 'ResourceNotFoundException: Requested resource not found',
    });
    expect(report.checks['sweeper:lastRun']?.[0]?.status).toBe('fail');
  });
});

describe('GET /health', () => {
  it('is a key-less, throttled Meta route that only reads the table', () => {
    expect(findOperation('getHealth')).toMatchObject({
      method: 'GET',
      path: '/health',
      scope: null,
      tag: 'Meta',
      access: { table: 'RO' },
      throttle: { rateLimit: expect.any(Number), burstLimit: expect.any(Number) },
    });
    expect([
      scheduleEverySeconds('scheduleSweeper', 'aws'),
      scheduleEverySeconds('scheduleSweeper', 'local'),
    ]).toEqual([60, 1]);
    expect(() => scheduleEverySeconds('deliveryWorker', 'aws')).toThrow('not a scheduled worker');
  });

  it('answers application/health+json, 200 on pass and 503 on fail, never cached', async () => {
    vi.stubEnv('HERALD_VERSION', '1.0.0');
    vi.stubEnv('HERALD_COMMIT', 'abc123');
    vi.resetModules();
    const { handler } = await import('#handlers/get-health');
    const call = async () => (await handler(apiEvent('getHealth'), lambdaContext())) as HttpResult;
    // Outside Lambda the sweeper's period is the local stack's (1 s): a sweep just now passes.
    cursorWith({ through: Date.now(), swept_at: Date.now() });
    const ok = await call();
    expect(ok.statusCode).toBe(200);
    expect(ok.headers).toMatchObject({
      'content-type': 'application/health+json',
      'cache-control': 'no-store',
    });
    expect(JSON.parse(ok.body as string)).toMatchObject({
      status: 'pass',
      version: '1.0.0',
      releaseId: 'abc123',
    });
    ddb.reset();
    cursorWith({ through: Date.now(), swept_at: Date.now() - 3_600_000 });
    const down = await call();
    expect(down.statusCode).toBe(503);
    expect(JSON.parse(down.body as string).status).toBe('fail');
    vi.unstubAllEnvs();
  });
});

describe('the sweeper raises the data model mark', () => {
  it('writes DATA_MODEL_VERSION conditionally (never lowers it), once per container', async () => {
    vi.resetModules();
    ddb.on(GetCommand, { Key: { pk: 'META', sk: 'SCHEMA' } }).resolves({ Item: undefined });
    ddb.on(UpdateCommand).resolves({});
    const { raiseDataModelMark } = await import('#adapters/data-model');
    expect(await raiseDataModelMark(NOW)).toBe(true);
    expect(await raiseDataModelMark(NOW)).toBe(false);
    const writes = ddb.commandCalls(UpdateCommand).map((c) => c.args[0].input);
    expect(writes).toHaveLength(1);
    expect(writes[0]).toMatchObject({
      Key: { pk: 'META', sk: 'SCHEMA' },
      ConditionExpression: 'attribute_not_exists(#v) OR #v < :v',
      ExpressionAttributeValues: { ':v': DATA_MODEL_VERSION, ':e': 'data_model' },
    });
  });

  it('leaves a mark that is already current alone', async () => {
    vi.resetModules();
    ddb.on(GetCommand, { Key: { pk: 'META', sk: 'SCHEMA' } }).resolves({ Item: { version: 1 } });
    const { raiseDataModelMark } = await import('#adapters/data-model');
    expect(await raiseDataModelMark(NOW)).toBe(false);
    expect(ddb.commandCalls(UpdateCommand)).toHaveLength(0);
  });
});
