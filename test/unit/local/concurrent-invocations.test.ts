import { resolve } from 'node:path';
import type {
  APIGatewayProxyEventV2,
  APIGatewayProxyStructuredResultV2,
  Context,
  SQSBatchResponse,
  SQSEvent,
} from 'aws-lambda';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { lambdaContext, loadHandler } from '../../../bin/local/front-door.ts';
import { apiEvent, sqsEvent } from '../support/fixtures.ts';
import { pauses as apiPauses } from './support/paused-api.ts';
import { pauses as workerPauses } from './support/paused-worker.ts';

// The local stack runs every function's handler in one process, so invocations overlap, sharing the
// one Powertools logger and each handler module's batch processor. Each invocation must still log
// under its own function name and request id, keep the keys it appended to itself, and report its
// own batch's failures: what Lambda gives each invocation by running it alone in its container.
// The handlers are loaded and invoked as the front door and the pollers do (loadHandler).

vi.hoisted(() => {
  vi.stubEnv('POWERTOOLS_LOG_LEVEL', 'INFO');
  vi.stubEnv('POWERTOOLS_DEV', undefined);
});

const root = resolve(import.meta.dirname, '../../..');

function deferred() {
  let release = () => {};
  const done = new Promise<void>((ok) => {
    release = ok;
  });
  return { done, release };
}

/** Lets every pending callback and I/O run, so whatever can move on has. */
const settle = () => new Promise((ok) => setTimeout(ok, 20));

let lines: Array<Record<string, unknown>> = [];

let api: (event: APIGatewayProxyEventV2, context: Context) => Promise<APIGatewayProxyStructuredResultV2>;
let worker: (event: SQSEvent, context: Context) => Promise<SQSBatchResponse>;
const concurrency = process.env.AWS_LAMBDA_MAX_CONCURRENCY;

beforeAll(async () => {
  api = await loadHandler(root, 'test/unit/local/support/paused-api.ts');
  worker = await loadHandler<SQSEvent, SQSBatchResponse>(root, 'test/unit/local/support/paused-worker.ts');
});

afterAll(() => {
  vi.unstubAllEnvs();
  if (concurrency === undefined) delete process.env.AWS_LAMBDA_MAX_CONCURRENCY;
  else process.env.AWS_LAMBDA_MAX_CONCURRENCY = concurrency;
});

beforeEach(() => {
  lines = [];
  apiPauses.clear();
  workerPauses.clear();
  // Powertools writes INFO to stdout and WARN to stderr.
  const write = ((chunk: unknown) => {
    for (const text of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(text));
    return true;
  }) as typeof process.stdout.write;
  vi.spyOn(process.stdout, 'write').mockImplementation(write);
  vi.spyOn(process.stderr, 'write').mockImplementation(write);
  return () => vi.restoreAllMocks();
});

const request = (who: string): APIGatewayProxyEventV2 => ({ ...apiEvent('getOpenApi'), rawPath: `/${who}` });

describe('concurrent invocations in the local stack', () => {
  it('log under their own function name and request id, with only their own keys', async () => {
    const list = deferred();
    const delivery = deferred();
    apiPauses.set('list', list.done);
    workerPauses.set('delivery', delivery.done);

    // listChannels starts and waits; a delivery attempt starts and waits; getPost runs to its end
    // (resetting its keys) while both are mid-flight; then the delivery and listChannels finish.
    const listing = api(request('list'), lambdaContext('listChannels', 'req-list'));
    await settle();
    const delivering = worker(
      sqsEvent([{ body: JSON.stringify({ who: 'delivery' }) }]),
      lambdaContext('deliveryWorker', 'req-delivery'),
    );
    await settle();
    expect((await api(request('get'), lambdaContext('getPost', 'req-get'))).statusCode).toBe(200);
    delivery.release();
    expect((await delivering).batchItemFailures).toEqual([]);
    list.release();
    expect((await listing).statusCode).toBe(200);

    const expected: Array<[string, string, string, string | undefined]> = [
      ['list before', 'listChannels', 'req-list', 'list'],
      ['delivery attempt', 'deliveryWorker', 'req-delivery', undefined],
      ['get before', 'getPost', 'req-get', 'get'],
      ['get after', 'getPost', 'req-get', 'get'],
      ['delivery done', 'deliveryWorker', 'req-delivery', undefined],
      ['list after', 'listChannels', 'req-list', 'list'],
    ];
    expect(lines.map((l) => [l.message, l.function_name, l.function_request_id, l.caller])).toEqual(expected);
  });

  it("report their own batch's failures", async () => {
    const first = deferred();
    workerPauses.set('slow', first.done);
    // The first batch fails one message at once and waits on another; a second batch runs to its
    // end meanwhile. The failed message must still be reported, or the queue would delete it.
    const one = worker(
      sqsEvent([
        { id: 'm-fails', body: JSON.stringify({ who: 'fails', fail: true }) },
        { id: 'm-slow', body: JSON.stringify({ who: 'slow' }) },
      ]),
      lambdaContext('deliveryWorker', 'req-one'),
    );
    await settle();
    const two = await worker(
      sqsEvent([{ id: 'm-quick', body: JSON.stringify({ who: 'quick' }) }]),
      lambdaContext('deliveryWorker', 'req-two'),
    );
    first.release();
    expect(two.batchItemFailures).toEqual([]);
    expect((await one).batchItemFailures).toEqual([{ itemIdentifier: 'm-fails' }]);
  });
});
