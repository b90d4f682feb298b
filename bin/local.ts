// `npm start`: the local stack. The same handler modules as in AWS, behind a local front door,
// against DynamoDB Local (with its stream) and fauxqs (SQS). Prints `herald ready <url>`.
import { mkdirSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { join, resolve } from 'node:path';
import { DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import { workers } from '#lib/operations';
import { createFrontDoor, lambdaContext } from './local/front-door.ts';
import {
  checkJava,
  ensureTable,
  LOCAL_CREDENTIALS,
  LOCAL_REGION,
  startDynamo,
  startQueues,
} from './local/services.ts';
import { dataDir, localSecret, removeStackInfo, writeStackInfo } from './local/stack-file.ts';
import { StreamPoller } from './local/stream-poller.ts';

const root = resolve(import.meta.dirname, '..');
const TABLE_NAME = 'herald';

async function main() {
  // Node 20 is supported here; the SDK's notice about its future Node 22 floor is noise for users.
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  try {
    checkJava();
  } catch (err) {
    console.error(`herald: ${(err as Error).message}`);
    process.exit(1);
  }
  const dir = dataDir();
  mkdirSync(join(dir, 'dynamodb'), { recursive: true });
  const port = Number(process.env.PORT ?? 3000);
  const host = process.env.HOST ?? '127.0.0.1';

  const stops: Array<() => Promise<void>> = [];
  let stopping = false;
  const shutdown = async (code: number) => {
    if (stopping) return;
    stopping = true;
    removeStackInfo(dir);
    for (const stop of stops.reverse()) await stop().catch((e) => console.error('shutdown:', e));
    process.exit(code);
  };
  process.once('SIGINT', () => void shutdown(0));
  process.once('SIGTERM', () => void shutdown(0));

  try {
    const dynamo = await startDynamo(join(dir, 'dynamodb'));
    stops.push(dynamo.stop);
    const queues = await startQueues();
    stops.push(queues.stop);
    const streamArn = await ensureTable(dynamo.endpoint, TABLE_NAME);

    // The handlers read these at load, exactly as in Lambda; the SDK reads the endpoints.
    Object.assign(process.env, {
      AWS_REGION: LOCAL_REGION,
      AWS_ACCESS_KEY_ID: LOCAL_CREDENTIALS.accessKeyId,
      AWS_SECRET_ACCESS_KEY: LOCAL_CREDENTIALS.secretAccessKey,
      AWS_ENDPOINT_URL_DYNAMODB: dynamo.endpoint,
      AWS_ENDPOINT_URL_SQS: queues.endpoint,
      TABLE_NAME,
      DELIVERY_QUEUE_URL: queues.deliveryQueueUrl,
      HERALD_CURSOR_SECRET: localSecret(dir, 'cursor'),
      POWERTOOLS_SERVICE_NAME: 'herald',
      POWERTOOLS_LOG_LEVEL: process.env.POWERTOOLS_LOG_LEVEL ?? process.env.LOG_LEVEL ?? 'WARN',
    });

    const relay = workers.find((w) => w.id === 'streamRelay');
    const relayModule = (await import(join(root, relay?.entry ?? ''))) as {
      handler: ConstructorParameters<typeof StreamPoller>[0]['handler'];
    };
    const poller = new StreamPoller({
      client: new DynamoDBStreamsClient({
        endpoint: dynamo.endpoint,
        region: LOCAL_REGION,
        credentials: LOCAL_CREDENTIALS,
      }),
      streamArn,
      handler: relayModule.handler,
      context: () => lambdaContext('streamRelay', `relay-${Date.now()}`, 60_000),
      checkpointFile: join(dir, 'stream-checkpoints.json'),
      onError: (err) => console.error('[stream-relay]', err),
    });
    poller.start();
    stops.push(() => poller.stop());

    const server = createFrontDoor(root);
    await new Promise<void>((ok, fail) => {
      server.once('error', fail);
      server.listen(port, host, () => ok());
    });
    stops.push(
      () =>
        new Promise<void>((ok) => {
          server.close(() => ok());
          server.closeAllConnections();
        }),
    );
    const addr = server.address() as AddressInfo;
    const baseUrl = `http://${host}:${addr.port}`;
    writeStackInfo(dir, {
      pid: process.pid,
      baseUrl,
      dynamodbEndpoint: dynamo.endpoint,
      sqsEndpoint: queues.endpoint,
      tableName: TABLE_NAME,
      deliveryQueueUrl: queues.deliveryQueueUrl,
      deliveryDlqUrl: queues.deliveryDlqUrl,
    });
    console.log(`herald ready ${baseUrl}`);
  } catch (err) {
    console.error(`herald: ${err instanceof Error ? err.message : String(err)}`);
    await shutdown(1);
  }
}

void main();
