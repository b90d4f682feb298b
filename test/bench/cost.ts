import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';

// Cost model (issue 8): dollars per million requests of each API operation in AWS. DynamoDB read
// and write units are measured, not estimated: the operations' real handlers run in-process
// against DynamoDB Local with ReturnConsumedCapacity=TOTAL added to every call. Lambda duration is
// modelled from the operation's sequential DynamoDB round trips (measured in round-trips.ts and
// asserted in test/unit/usecases/round-trips.test.ts) at a typical in-region latency.

const root = resolve(import.meta.dirname, '../..');

/** us-east-1 list prices (2026): Lambda arm64, DynamoDB on-demand, HTTP API. */
export const PRICES = {
  lambdaPerMillionRequests: 0.2,
  lambdaPerGbSecondArm: 0.0000133334,
  dynamoPerMillionWrite: 0.625,
  dynamoPerMillionRead: 0.125,
  httpApiPerMillion: 1.0,
};
/** A DynamoDB call in-region (SDK included), and the handler's own CPU, for the duration model. */
export const MODEL = { msPerRoundTrip: 6, handlerMs: 2 };

export interface OperationCost {
  id: string;
  memoryMb: number;
  readUnits: number;
  writeUnits: number;
  sequentialRoundTrips: number;
  billedMs: number;
  dollarsPerMillion: { lambda: number; dynamodb: number; apiGateway: number; total: number };
}

type Handler = (
  event: APIGatewayProxyEventV2,
  context: unknown,
) => Promise<{ statusCode?: number; body?: string }>;

/** Sequential DynamoDB round trips on the warm path (BENCHMARKS.md "DynamoDB round trips"). */
const DEPTH: Record<string, number> = {
  getPost: 1,
  listPosts: 1,
  listChannels: 1,
  listMedia: 1,
  getUsage: 1,
  getAnalytics: 1,
  createPost: 2,
  reschedulePost: 2,
  publishPost: 2,
  deletePost: 2,
  listWebhookEndpoints: 1,
  updateWebhookEndpoint: 2,
  listWebhookDeliveries: 1,
};

export async function benchCost(): Promise<OperationCost[]> {
  const { startDynamo, ensureTable, LOCAL_CREDENTIALS, LOCAL_REGION } = await import(
    '../../bin/local/services.ts'
  );
  const dir = mkdtempSync(join(tmpdir(), 'herald-cost-'));
  const dynamo = await startDynamo(dir);
  try {
    await ensureTable(dynamo.endpoint, 'herald-cost');
    Object.assign(process.env, {
      AWS_REGION: LOCAL_REGION,
      AWS_ACCESS_KEY_ID: LOCAL_CREDENTIALS.accessKeyId,
      AWS_SECRET_ACCESS_KEY: LOCAL_CREDENTIALS.secretAccessKey,
      AWS_ENDPOINT_URL_DYNAMODB: dynamo.endpoint,
      TABLE_NAME: 'herald-cost',
      HERALD_CURSOR_SECRET: 'cost-bench',
      POWERTOOLS_LOG_LEVEL: 'SILENT',
      AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
    });
    const { dynamo: client } = await import('#shared/clients');
    const consumed = { read: 0, write: 0 };
    client.middlewareStack.add(
      (next, context) => async (args) => {
        (args.input as { ReturnConsumedCapacity?: string }).ReturnConsumedCapacity = 'TOTAL';
        const out = await next(args);
        const cc = (out.output as { ConsumedCapacity?: unknown }).ConsumedCapacity;
        for (const c of (
          [] as Array<{ ReadCapacityUnits?: number; WriteCapacityUnits?: number; CapacityUnits?: number }>
        ).concat((cc as never) ?? [])) {
          // DynamoDB Local reports CapacityUnits only; the command tells reads from writes.
          const units = c.CapacityUnits ?? (c.ReadCapacityUnits ?? 0) + (c.WriteCapacityUnits ?? 0);
          if (WRITES.test(String(context.commandName))) consumed.write += units;
          else consumed.read += units;
        }
        return out;
      },
      { step: 'initialize', name: 'consumedCapacity' },
    );
    const admin = await import('#usecases/admin');
    const { operations } = await import('#lib/operations');
    const created = await admin.createOrg({ name: 'Cost', plan: 'agency', ownerEmail: 'cost@example.com' });
    const orgId = created.org.id;
    const key = (
      await admin.mintKey({
        orgId,
        by: created.owner.id,
        scopes: [
          'posts:read',
          'posts:write',
          'channels:read',
          'analytics:read',
          'webhooks:read',
          'webhooks:write',
        ],
      })
    ).key;
    await admin.setSettings({ orgId, by: created.owner.id, patch: { dangerous_ops: true } });
    const channel = await admin.connectChannel({
      orgId,
      platform: 'mastodon',
      handle: 'cost',
      credentials: { instance: 'https://mastodon.example', access_token: 'token' },
    });

    const call = async (id: string, path: string, params: Record<string, string>, body?: unknown) => {
      const op = operations.find((o) => o.id === id);
      if (!op) throw new Error(`no operation ${id}`);
      const mod = (await import(join(root, op.entry))) as { handler: Handler };
      const event: APIGatewayProxyEventV2 = {
        version: '2.0',
        routeKey: `${op.method} ${op.path}`,
        rawPath: path,
        rawQueryString: '',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', host: 'cost.local' },
        ...(Object.keys(params).length ? { pathParameters: params } : {}),
        requestContext: {
          accountId: '0',
          apiId: 'cost',
          domainName: 'cost.local',
          domainPrefix: 'cost',
          http: { method: op.method, path, protocol: 'HTTP/1.1', sourceIp: '127.0.0.1', userAgent: 'cost' },
          requestId: randomUUID(),
          routeKey: `${op.method} ${op.path}`,
          stage: '$default',
          time: new Date().toISOString(),
          timeEpoch: Date.now(),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        isBase64Encoded: false,
      };
      const context = {
        functionName: id,
        awsRequestId: randomUUID(),
        getRemainingTimeInMillis: () => 10_000,
        invokedFunctionArn: `arn:aws:lambda:us-east-1:0:function:${id}`,
        memoryLimitInMB: '1024',
        functionVersion: '$LATEST',
        logGroupName: id,
        logStreamName: 'cost',
        callbackWaitsForEmptyEventLoop: false,
      };
      const res = await mod.handler(event, context);
      if ((res.statusCode ?? 500) >= 300) throw new Error(`${id}: ${res.statusCode} ${res.body}`);
      return JSON.parse(res.body ?? '{}') as Record<string, unknown>;
    };
    /** Units of one warm call (the auth cache is warm after the first call of the run). */
    const measure = async (fn: () => Promise<unknown>) => {
      consumed.read = 0;
      consumed.write = 0;
      await fn();
      return { ...consumed };
    };

    const draft = () =>
      call(
        'createPost',
        '/v1/posts',
        {},
        { variants: [{ channel_id: channel.id, body: 'Cost model post' }], draft: true },
      );
    const warm = (await draft()) as { id: string };
    const results: Array<{ id: string; units: { read: number; write: number } }> = [];
    const add = async (id: string, fn: () => Promise<unknown>) =>
      results.push({ id, units: await measure(fn) });
    await add('createPost', draft);
    await add('getPost', () => call('getPost', `/v1/posts/${warm.id}`, { id: warm.id }));
    await add('listPosts', () => call('listPosts', '/v1/posts', {}));
    await add('listChannels', () => call('listChannels', '/v1/channels', {}));
    await add('listMedia', () => call('listMedia', '/v1/media', {}));
    await add('getUsage', () => call('getUsage', '/v1/usage', {}));
    await add('getAnalytics', () => call('getAnalytics', '/v1/analytics', {}));
    const future = new Date(Date.now() + 86_400_000).toISOString();
    await add('reschedulePost', () =>
      call('reschedulePost', `/v1/posts/${warm.id}`, { id: warm.id }, { scheduled_at: future }),
    );
    await add('publishPost', () => call('publishPost', `/v1/posts/${warm.id}/publish`, { id: warm.id }));
    const other = (await draft()) as { id: string };
    await add('deletePost', () => call('deletePost', `/v1/posts/${other.id}`, { id: other.id }));
    await add('listWebhookEndpoints', () => call('listWebhookEndpoints', '/v1/webhook-endpoints', {}));

    return results.map(({ id, units }) => {
      const op = operations.find((o) => o.id === id);
      const memoryMb = op?.memoryMb ?? 1024;
      const depth = DEPTH[id] ?? 1;
      const billedMs = Math.ceil(MODEL.handlerMs + depth * MODEL.msPerRoundTrip);
      const lambda =
        PRICES.lambdaPerMillionRequests +
        (memoryMb / 1024) * (billedMs / 1000) * PRICES.lambdaPerGbSecondArm * 1e6;
      const dynamodb = units.write * PRICES.dynamoPerMillionWrite + units.read * PRICES.dynamoPerMillionRead;
      const round = (n: number) => Number(n.toFixed(3));
      return {
        id,
        memoryMb,
        readUnits: units.read,
        writeUnits: units.write,
        sequentialRoundTrips: depth,
        billedMs,
        dollarsPerMillion: {
          lambda: round(lambda),
          dynamodb: round(dynamodb),
          apiGateway: PRICES.httpApiPerMillion,
          total: round(lambda + dynamodb + PRICES.httpApiPerMillion),
        },
      };
    });
  } finally {
    await dynamo.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

const WRITES = /^(Put|Update|Delete|BatchWrite|TransactWrite)/;

export function costSection(rows: OperationCost[], machine: string): string {
  const line = (r: OperationCost) =>
    `| ${r.id} | ${r.memoryMb} | ${r.readUnits} | ${r.writeUnits} | ${r.sequentialRoundTrips} | ${r.billedMs} | ${r.dollarsPerMillion.lambda.toFixed(2)} | ${r.dollarsPerMillion.dynamodb.toFixed(2)} | ${r.dollarsPerMillion.apiGateway.toFixed(2)} | **${r.dollarsPerMillion.total.toFixed(2)}** |`;
  return `Measured ${new Date().toISOString().slice(0, 10)} on ${machine} by \`npm run bench\` (test/bench/cost.ts).
Read/write units: the operations' handlers in-process against DynamoDB Local with
\`ReturnConsumedCapacity: TOTAL\` on every call (a warm call: API key cached; the rate limiter's two
counter writes included). Lambda: arm64, the configured memory, billed duration modelled as
${MODEL.handlerMs} ms + ${MODEL.msPerRoundTrip} ms per sequential DynamoDB round trip. Prices: Lambda $${PRICES.lambdaPerMillionRequests}/M requests +
$${PRICES.lambdaPerGbSecondArm}/GB-s, DynamoDB on-demand $${PRICES.dynamoPerMillionWrite}/M write units and $${PRICES.dynamoPerMillionRead}/M read units,
HTTP API $${PRICES.httpApiPerMillion}/M (us-east-1).

| Operation | MB | RRU | WRU | seq. round trips | billed ms | Lambda $/M | DynamoDB $/M | API GW $/M | total $/M |
|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|
${rows.map(line).join('\n')}`;
}
