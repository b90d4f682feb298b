// `npm start`: the local stack. The same handler modules as in AWS, behind a local front door,
// against DynamoDB Local (with its stream), fauxqs (SQS), s3rver (S3) and the stand-ins of
// bin/local/standins (KMS, Step Functions, SES, Lambda Invoke). Prints `herald ready <url>` and
// `herald console http://localhost:<port>/console`.
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { join, resolve } from 'node:path';
import { DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import { S3Client } from '@aws-sdk/client-s3';
import { SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { modelClientFrom } from '#adapters/ai/model-client';
import { QUEUE_BODY_BUCKET_ENV } from '#core/messages';
import { consoleAssetsVersion } from '#lib/console-assets';
import { apiOperations, CONSOLE_PATH, queues, stateMachines, workers } from '#lib/operations';
import { versionEnvironment } from '#lib/version';
import { logger } from '#shared/logger';
import { runningVersion } from '#shared/version';
import { LOCAL_OPS_ENV } from './cli/target.ts';
import { type AwsStandins, type LocalStateMachine, startAwsStandins } from './local/aws-standins.ts';
import { countCapacity } from './local/capacity.ts';
import { ensureDataDir, prepareDataDir } from './local/data-dir.ts';
import { createFrontDoor, lambdaContext, loadHandler } from './local/front-door.ts';
import { IntervalRunner } from './local/interval-runner.ts';
import { invokableFunctions, invokedFunctionEnv } from './local/invoked-functions.ts';
import { expireQueueBodies, QUEUE_BODY_SWEEP_MS } from './local/queue-body-expiry.ts';
import { QueuePoller, type QueuePollerOptions } from './local/queue-poller.ts';
import {
  awaitLocalCommits,
  checkJava,
  dynamoCredentials,
  ensureTable,
  LOCAL_CREDENTIALS,
  LOCAL_REGION,
  migrateSharedDb,
  startDynamo,
  startQueues,
  startS3,
} from './local/services.ts';
import { dataDir, localSecret, removeStackInfo, writeStackInfo } from './local/stack-file.ts';
import { signForStandIns } from './local/stand-in-signing.ts';
import { StreamPoller, type StreamPollerOptions } from './local/stream-poller.ts';
import { startWorkers } from './local/workers.ts';

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
  ensureDataDir(dir);
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
    // The generation engine is the user's HERALD_AI_* (the handlers read the same environment):
    // a half setting stops the start here, before any service, rather than failing a generation.
    const engine = modelClientFrom(process.env);
    const credentials = dynamoCredentials(dir);
    // An older data directory is brought to this version's layout first; a newer one is refused.
    for (const done of prepareDataDir(dir, [
      {
        from: 1,
        what: "the table's database moved to this data directory's own DynamoDB key",
        run: (d) => migrateSharedDb(join(d, 'dynamodb'), credentials),
      },
    ]))
      console.log(`herald: upgraded ${dir}: ${done}`);
    const dynamo = await startDynamo(join(dir, 'dynamodb'), credentials);
    stops.push(dynamo.stop);
    const sqsQueues = await startQueues(join(dir, 'queues.journal'));
    stops.push(sqsQueues.stop);
    const streamArn = await ensureTable(dynamo.endpoint, TABLE_NAME, credentials);
    // The handlers sign every service with the env's key, S3 included, so s3rver learns it.
    const s3 = await startS3(join(dir, 's3'), credentials);
    stops.push(s3.stop);

    // The handlers read these at load, exactly as in Lambda; the SDK reads the endpoints. The key
    // is DynamoDB Local's (its per-key database); the other stand-ins check none.
    Object.assign(process.env, {
      AWS_REGION: LOCAL_REGION,
      AWS_ACCESS_KEY_ID: credentials.accessKeyId,
      AWS_SECRET_ACCESS_KEY: credentials.secretAccessKey,
      AWS_ENDPOINT_URL_DYNAMODB: dynamo.endpoint,
      AWS_ENDPOINT_URL_SQS: sqsQueues.endpoint,
      AWS_ENDPOINT_URL_S3: s3.endpoint,
      HERALD_UPLOAD_BUCKET: s3.buckets.uploads,
      HERALD_MEDIA_BUCKET: s3.buckets.media,
      // Queue messages sent by reference: the upload bucket's queue-bodies/ prefix, as in AWS.
      [QUEUE_BODY_BUCKET_ENV]: s3.buckets.uploads,
      TABLE_NAME,
      ...Object.fromEntries(queues.map((q) => [q.env, sqsQueues.queues[q.name].url])),
      HERALD_CURSOR_SECRET: localSecret(dir, 'cursor'),
      POWERTOOLS_SERVICE_NAME: 'herald',
      POWERTOOLS_LOG_LEVEL: process.env.POWERTOOLS_LOG_LEVEL ?? process.env.LOG_LEVEL ?? 'WARN',
      // The release and commit, as the stack sets them on every function.
      ...versionEnvironment(),
    });
    // The logger was made before (this file's imports load it): it learns them now.
    logger.appendPersistentKeys({ ...runningVersion() });
    // The handlers' DynamoDB client (the same module instance they import): a transaction's answer
    // waits for DynamoDB Local's COMMIT, so what a client was told is written survives a crash.
    const { dynamo: handlersDynamo } = await import('#shared/clients');
    awaitLocalCommits(handlersDynamo);
    // The stand-ins verify no signature: the handlers' hot clients skip computing one
    // (bin/local/stand-in-signing.ts). The same module instances the handlers import.
    const dynamoSigning = { accessKeyId: credentials.accessKeyId, region: LOCAL_REGION, service: 'dynamodb' };
    signForStandIns(handlersDynamo, dynamoSigning);
    signForStandIns((await import('#shared/sqs')).sqs, { ...dynamoSigning, service: 'sqs' });
    // Benchmarks only: the handlers' DynamoDB capacity, counted (bin/local/capacity.ts).
    if (process.env.HERALD_COUNT_CAPACITY) {
      const stop = countCapacity(handlersDynamo, process.env.HERALD_COUNT_CAPACITY);
      stops.push(async () => stop());
    }

    // KMS, Step Functions, SES and Lambda Invoke stand-ins; the state machines run their ASL files
    // with Task states invoking the same worker handlers Lambda would.
    const invokable = invokableFunctions();
    const standins: AwsStandins = await startAwsStandins({
      kmsKeyMaterial: Buffer.from(localSecret(dir, 'kms'), 'base64url'),
      stateMachines: await Promise.all(stateMachines.map((spec) => localStateMachine(spec))),
      // The MCP server's tool calls and the probe (completeMediaUpload invokes probeMedia): the
      // function's handler module, as Lambda Invoke would run it (bin/local/invoked-functions.ts).
      invoke: async (name, payload) => {
        const fn = invokable.get(name);
        if (!fn) throw new Error(`no function ${name}`);
        const handler = await loadHandler<unknown, unknown>(root, fn.entry);
        return handler(payload, lambdaContext(name, randomUUID(), fn.timeoutMs));
      },
      log: (line) => console.log(`[aws] ${line}`),
      executionsFile: join(dir, 'step-functions.json'),
    });
    stops.push(() => standins.stop());
    Object.assign(process.env, {
      AWS_ENDPOINT_URL_KMS: standins.endpoint,
      AWS_ENDPOINT_URL_SFN: standins.endpoint,
      AWS_ENDPOINT_URL_SESV2: standins.endpoint,
      AWS_ENDPOINT_URL_LAMBDA: standins.endpoint,
      HERALD_OPERATION_FUNCTIONS: JSON.stringify(Object.fromEntries(apiOperations.map((o) => [o.id, o.id]))),
      ...invokedFunctionEnv(),
      WEBHOOK_SECRETS_KEY_ID: 'alias/herald-webhook-secrets',
      CONNECTION_SECRETS_KEY_ID: 'alias/herald-connection-secrets',
      HERALD_NOTIFY_FROM: process.env.HERALD_NOTIFY_FROM ?? 'herald@localhost',
      ...Object.fromEntries(stateMachines.map((spec) => [spec.env, localStateMachineArn(spec.name)])),
    });

    // Every worker of the manifest, on its trigger: the stream, a queue, a timer (state machine
    // tasks are invoked by the Step Functions stand-in).
    const sqs = signForStandIns(
      new SQSClient({
        endpoint: sqsQueues.endpoint,
        region: LOCAL_REGION,
        credentials: LOCAL_CREDENTIALS,
        useQueueUrlAsEndpoint: false,
      }),
      { accessKeyId: LOCAL_CREDENTIALS.accessKeyId, region: LOCAL_REGION, service: 'sqs' },
    );
    const streamsClient = signForStandIns(
      new DynamoDBStreamsClient({ endpoint: dynamo.endpoint, region: LOCAL_REGION, credentials }),
      dynamoSigning,
    );
    await startWorkers(workers, {
      loadHandler: (entry) => loadHandler(root, entry),
      context: (id, timeoutMs) => lambdaContext(id, randomUUID(), timeoutMs),
      queue: (name) => sqsQueues.queues[name],
      onError: (id) => (err) => console.error(`[${id}]`, err),
      streamPoller: ({ handler, context, source, onError }) =>
        new StreamPoller({
          client: streamsClient,
          streamArn,
          handler: handler as StreamPollerOptions['handler'],
          context,
          checkpointFile: join(dir, 'stream-checkpoints.json'),
          source,
          onFailure: async (failure) => {
            await sqs.send(
              new SendMessageCommand({
                QueueUrl: sqsQueues.streamFailures.url,
                MessageBody: JSON.stringify(failure),
              }),
            );
          },
          onError,
        }),
      queuePoller: ({ queueUrl, queueArn, handler, context, concurrency, batchSize, onError }) =>
        new QueuePoller({
          client: sqs,
          queueUrl,
          queueArn,
          handler: handler as QueuePollerOptions['handler'],
          context,
          concurrency,
          batchSize,
          onError,
        }),
      timer: ({ run, everyMs, onError }) => new IntervalRunner(run, everyMs, onError),
      started: (source) => stops.push(() => source.stop()),
    });

    // The bucket's lifecycle rule on queue bodies, which s3rver lacks.
    const bodiesS3 = new S3Client({
      endpoint: s3.endpoint,
      region: LOCAL_REGION,
      credentials,
      forcePathStyle: true,
    });
    const expireBodies = () => expireQueueBodies(bodiesS3, s3.buckets.uploads);
    await expireBodies();
    const bodyExpiry = new IntervalRunner(expireBodies, QUEUE_BODY_SWEEP_MS, (err) =>
      console.error('[queue bodies]', err),
    );
    bodyExpiry.start();
    stops.push(async () => {
      await bodyExpiry.stop();
      bodiesS3.destroy();
    });

    const server = createFrontDoor(root, {
      endpoint: s3.endpoint,
      credentials,
      uploadBucket: s3.buckets.uploads,
      mediaBucket: s3.buckets.media,
    });
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
    // Media is delivered, and uploads are received, by this front door (read per request).
    process.env.HERALD_MEDIA_BASE_URL = baseUrl;
    process.env.HERALD_LOCAL_UPLOAD_ORIGIN = baseUrl;
    // Platforms send people back to {baseUrl}/oauth/callback/{platform} (register it in the apps).
    process.env.HERALD_PUBLIC_URL = baseUrl;
    // Browsers refuse passkeys on an IP address, so the console is localhost (the loopback the
    // server listens on); its pages on 127.0.0.1 send people there. Read per request, like the above.
    const consoleUrl = `http://localhost:${addr.port}`;
    process.env.HERALD_CONSOLE_URL = consoleUrl;
    process.env.HERALD_CONSOLE_ASSETS_VERSION = consoleAssetsVersion(root);
    writeStackInfo(dir, {
      pid: process.pid,
      baseUrl,
      dynamodbEndpoint: dynamo.endpoint,
      dynamodbCredentials: credentials,
      sqsEndpoint: sqsQueues.endpoint,
      s3Endpoint: s3.endpoint,
      tableName: TABLE_NAME,
      // What the admin CLI needs besides the table: the KMS stand-in (platform apps' secrets, pasted
      // credentials), the public URL and the local-only knobs that point platforms at sandboxes.
      cliEnv: {
        AWS_ENDPOINT_URL_KMS: String(process.env.AWS_ENDPOINT_URL_KMS),
        CONNECTION_SECRETS_KEY_ID: String(process.env.CONNECTION_SECRETS_KEY_ID),
        HERALD_PUBLIC_URL: baseUrl,
        // Enrollment links (`herald org create`, `user add`, `user enroll`) point at the console.
        HERALD_CONSOLE_URL: consoleUrl,
        // `herald dlq …` and `herald stream replay`: fauxqs, the table stream, the Lambda stand-in.
        AWS_ENDPOINT_URL_SQS: sqsQueues.endpoint,
        AWS_ENDPOINT_URL_DYNAMODB_STREAMS: dynamo.endpoint,
        AWS_ENDPOINT_URL_LAMBDA: standins.endpoint,
        [LOCAL_OPS_ENV.streamDlqUrl]: sqsQueues.streamFailures.url,
        [LOCAL_OPS_ENV.tableStreamArn]: streamArn,
        // Locally a function's name is its manifest id (invoked-functions.ts).
        [LOCAL_OPS_ENV.streamRelayFunction]: workers.find((w) => w.trigger.kind === 'stream')?.id ?? '',
        ...Object.fromEntries(
          Object.entries(process.env).filter(
            (e): e is [string, string] =>
              typeof e[1] === 'string' &&
              (/^HERALD_PLATFORM_[A-Z]+_URL$/.test(e[0]) || e[0] === 'HERALD_WEBHOOK_ALLOW_CIDRS'),
          ),
        ),
      },
      queues: Object.fromEntries(
        Object.entries(sqsQueues.queues).map(([k, v]) => [k, { url: v.url, dlqUrl: v.dlqUrl }]),
      ),
    });
    // Failure ladders that were waiting when the stack last stopped (crash or not) carry on.
    standins.resumeExecutions();
    console.log(`herald ai engine ${engine ? engine.model : 'rules (no HERALD_AI_* engine set)'}`);
    console.log(`herald ready ${baseUrl}`);
    console.log(`herald console ${consoleUrl}${CONSOLE_PATH}`);
  } catch (err) {
    console.error(`herald: ${err instanceof Error ? err.message : String(err)}`);
    await shutdown(1);
  }
}

const localStateMachineArn = (name: string) =>
  `arn:aws:states:${LOCAL_REGION}:000000000000:stateMachine:herald-${name}`;

/** The ASL file with `${<worker>FunctionArn}` bound to the worker's handler module. */
async function localStateMachine(spec: (typeof stateMachines)[number]): Promise<LocalStateMachine> {
  const text = readFileSync(join(root, spec.definition), 'utf8');
  const asl = JSON.parse(text) as {
    States: Record<string, { Type: string; Parameters?: { FunctionName?: string } }>;
  };
  const taskHandlers: LocalStateMachine['taskHandlers'] = {};
  for (const [stateName, state] of Object.entries(asl.States)) {
    const ref = /^\$\{(\w+)FunctionArn\}$/.exec(state.Parameters?.FunctionName ?? '');
    if (state.Type !== 'Task' || !ref) continue;
    const worker = workers.find((w) => w.id === ref[1]);
    if (!worker) throw new Error(`${spec.definition}: state ${stateName} names no worker (${ref[1]})`);
    const handler = await loadHandler<unknown, unknown>(root, worker.entry);
    // lambda:invoke answers {Payload: <the function's result>}; the ASL's ResultSelector reads it.
    taskHandlers[stateName] = async (input) => ({
      Payload: await handler(
        (input as { Payload?: unknown }).Payload,
        lambdaContext(worker.id, randomUUID(), worker.timeoutSeconds * 1000),
      ),
    });
  }
  return { arn: localStateMachineArn(spec.name), definition: text, taskHandlers };
}

void main();
