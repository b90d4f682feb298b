import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DynamoDBClient, PutItemCommand, TransactWriteItemsCommand } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import {
  awaitLocalCommits,
  dynamoCredentials,
  dynamoDbFile,
  dynamoJvmOptions,
  LOCAL_REGION,
  migrateSharedDb,
} from '../../../bin/local/services.ts';
import { writeStackInfo } from '../../../bin/local/stack-file.ts';

// The DynamoDB Local set-up without Java: the data directory's key, the move of an older data
// directory's shared database to it, and the hook that holds a transaction's answer until a
// request DynamoDB Local can only answer after the COMMIT (a fake DynamoDB here, to see the order).

const dirs: string[] = [];
const tmp = () => {
  dirs.push(mkdtempSync(join(tmpdir(), 'herald-ddb-')));
  return dirs.at(-1) as string;
};
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
const mode = (file: string) => statSync(file).mode & 0o777;

describe("the data directory's DynamoDB key", () => {
  it('is random, alphanumeric, kept in the data directory (mode 600) and the same on every start', () => {
    const dir = tmp();
    const first = dynamoCredentials(dir);
    expect(first.accessKeyId).toMatch(/^HERALD[A-Z0-9]{16}$/);
    expect(first.secretAccessKey.length).toBeGreaterThanOrEqual(40);
    expect(dynamoCredentials(dir)).toEqual(first);
    for (const name of ['dynamodb-access-key-id.secret', 'dynamodb-secret-access-key.secret'])
      expect(mode(join(dir, name))).toBe(0o600);
    expect(dynamoCredentials(tmp()).accessKeyId).not.toBe(first.accessKeyId);
  });

  it('is written to stack.json readable by its owner only', () => {
    const dir = tmp();
    const info = {
      pid: 1,
      baseUrl: 'http://127.0.0.1:1',
      dynamodbEndpoint: 'http://127.0.0.1:2',
      dynamodbCredentials: dynamoCredentials(dir),
      sqsEndpoint: 'http://127.0.0.1:3',
      tableName: 'herald',
      queues: {},
    };
    writeFileSync(join(dir, 'stack.json'), '{}', { mode: 0o644 });
    writeStackInfo(dir, info);
    expect(mode(join(dir, 'stack.json'))).toBe(0o600);
    expect(JSON.parse(readFileSync(join(dir, 'stack.json'), 'utf8'))).toEqual(info);
  });
});

describe('moving an older data directory’s shared database to the key', () => {
  const key = { accessKeyId: 'HERALDABCDEFGHIJKLMNOP', secretAccessKey: 'x' };

  it('names the file DynamoDB Local opens for the key and region', () => {
    expect(dynamoDbFile('/d', key)).toBe(`/d/HERALDABCDEFGHIJKLMNOP_${LOCAL_REGION}.db`);
  });

  it('does nothing without a shared database', () => {
    const db = tmp();
    expect(migrateSharedDb(db, key)).toBe('none');
    expect(migrateSharedDb(join(db, 'absent'), key)).toBe('none');
    expect(readdirSync(db)).toEqual([]);
  });

  it('renames the database and its journal files, contents intact', () => {
    const db = tmp();
    for (const suffix of ['', '-journal', '-wal', '-shm'])
      writeFileSync(join(db, `shared-local-instance.db${suffix}`), `data${suffix}`);
    expect(migrateSharedDb(db, key)).toBe('moved');
    const to = dynamoDbFile(db, key);
    expect(readdirSync(db).sort()).toEqual(
      ['', '-journal', '-shm', '-wal'].map((s) => `HERALDABCDEFGHIJKLMNOP_us-east-1.db${s}`),
    );
    for (const suffix of ['', '-journal', '-wal', '-shm'])
      expect(readFileSync(`${to}${suffix}`, 'utf8')).toBe(`data${suffix}`);
    // The next start finds nothing left to move.
    expect(migrateSharedDb(db, key)).toBe('none');
  });

  it('finishes a move that stopped after the journal (the database keeps its old name until last)', () => {
    const db = tmp();
    writeFileSync(join(db, 'shared-local-instance.db'), 'data');
    writeFileSync(`${dynamoDbFile(db, key)}-journal`, 'journal');
    expect(migrateSharedDb(db, key)).toBe('moved');
    expect(readFileSync(dynamoDbFile(db, key), 'utf8')).toBe('data');
    expect(readFileSync(`${dynamoDbFile(db, key)}-journal`, 'utf8')).toBe('journal');
  });

  it('refuses to choose when both databases exist, and says what to do', () => {
    const db = tmp();
    writeFileSync(join(db, 'shared-local-instance.db'), 'old');
    writeFileSync(dynamoDbFile(db, key), 'new');
    expect(() => migrateSharedDb(db, key)).toThrow(
      /shared-local-instance\.db.*HERALDABCDEFGHIJKLMNOP_us-east-1\.db.*Keep one.*delete/s,
    );
    expect(readFileSync(join(db, 'shared-local-instance.db'), 'utf8')).toBe('old');
    expect(readFileSync(dynamoDbFile(db, key), 'utf8')).toBe('new');
  });
});

describe('awaitLocalCommits', () => {
  let server: Server | undefined;
  afterEach(() => new Promise<void>((r) => (server ? server.close(() => r()) : r())));

  /** A fake DynamoDB endpoint: records each operation; ListTables waits for `release()`. */
  async function fakeDynamo(opts: { cancel?: boolean } = {}) {
    const ops: string[] = [];
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    server = createServer((req, res) => {
      const op = String(req.headers['x-amz-target']).split('.')[1] as string;
      ops.push(op);
      req.resume();
      req.on('end', async () => {
        if (op === 'ListTables') await released;
        const cancelled = op === 'TransactWriteItems' && opts.cancel;
        res.writeHead(cancelled ? 400 : 200, { 'content-type': 'application/x-amz-json-1.0' });
        res.end(
          JSON.stringify(
            cancelled
              ? {
                  __type: 'com.amazonaws.dynamodb.v20120810#TransactionCanceledException',
                  message: 'Transaction cancelled',
                  CancellationReasons: [{ Code: 'ConditionalCheckFailed' }],
                }
              : op === 'ListTables'
                ? { TableNames: [] }
                : {},
          ),
        );
      });
    });
    await new Promise<void>((r) => server?.listen(0, '127.0.0.1', () => r()));
    const client = new DynamoDBClient({
      endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      region: LOCAL_REGION,
      credentials: { accessKeyId: 'HERALDTEST', secretAccessKey: 'x' },
      maxAttempts: 1,
    });
    awaitLocalCommits(client);
    return { client, ops, release };
  }

  const put = { Put: { TableName: 't', Item: { pk: { S: 'a' }, sk: { S: 'b' } } } };

  it('answers a TransactWriteItems only after a ListTables issued after it was answered', async () => {
    const { client, ops, release } = await fakeDynamo();
    let done = false;
    const sent = client.send(new TransactWriteItemsCommand({ TransactItems: [put] })).then(() => {
      done = true;
    });
    while (ops.length < 2) await new Promise((r) => setTimeout(r, 5));
    expect(ops).toEqual(['TransactWriteItems', 'ListTables']);
    await new Promise((r) => setTimeout(r, 50));
    expect(done).toBe(false);
    release();
    await sent;
    expect(done).toBe(true);
    client.destroy();
  });

  it('holds the document client’s transactions too (the adapters use those)', async () => {
    const { client, ops, release } = await fakeDynamo();
    release();
    await DynamoDBDocumentClient.from(client).send(
      new TransactWriteCommand({ TransactItems: [{ Put: { TableName: 't', Item: { pk: 'a', sk: 'b' } } }] }),
    );
    expect(ops).toEqual(['TransactWriteItems', 'ListTables']);
    client.destroy();
  });

  it('adds nothing to other writes or to a cancelled transaction', async () => {
    const { client, ops, release } = await fakeDynamo({ cancel: true });
    release();
    await client.send(new PutItemCommand(put.Put));
    await expect(client.send(new TransactWriteItemsCommand({ TransactItems: [put] }))).rejects.toThrow(
      /cancelled/,
    );
    expect(ops).toEqual(['PutItem', 'TransactWriteItems']);
    client.destroy();
  });
});

describe("DynamoDB Local's JVM options", () => {
  it('runs C1 only by default, and puts HERALD_DYNAMODB_JVM_OPTS after it (a later option wins)', () => {
    expect(dynamoJvmOptions({})).toEqual(['-XX:TieredStopAtLevel=1']);
    expect(dynamoJvmOptions({ HERALD_DYNAMODB_JVM_OPTS: '  -XX:TieredStopAtLevel=4   -Xmx512m ' })).toEqual([
      '-XX:TieredStopAtLevel=1',
      '-XX:TieredStopAtLevel=4',
      '-Xmx512m',
    ]);
  });
});
