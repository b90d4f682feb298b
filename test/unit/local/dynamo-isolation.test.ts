import { existsSync, mkdirSync, mkdtempSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  DescribeTableCommand,
  DynamoDBClient,
  GetItemCommand,
  ListTablesCommand,
  PutItemCommand,
  ResourceNotFoundException,
} from '@aws-sdk/client-dynamodb';
import { afterAll, describe, expect, it } from 'vitest';
import {
  type DynamoService,
  dynamoCredentials,
  dynamoDbFile,
  ensureTable,
  LOCAL_REGION,
  type LocalCredentials,
  startDynamo,
} from '../../../bin/local/services.ts';
import { signForStandIns } from '../../../bin/local/stand-in-signing.ts';

// DynamoDB Local as the local stack runs it (Java; two starts, ~5 s): it listens on every
// interface, so only the data directory's random key may find the table. The data directory here
// is an upgraded one: its database was the older version's shared one.

const dir = mkdtempSync(join(tmpdir(), 'herald-isolation-'));
const dbPath = join(dir, 'dynamodb');
let engine: DynamoService | undefined;

afterAll(async () => {
  await engine?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const client = (credentials: LocalCredentials, region = LOCAL_REGION) =>
  // Loopback only: the test never talks to another interface.
  new DynamoDBClient({ endpoint: engine?.endpoint, region, credentials, maxAttempts: 1 });

describe('DynamoDB Local for a data directory', () => {
  it('serves the upgraded table to the data directory’s key and to no other key or region', async () => {
    // An older data directory: the table and a record in `shared-local-instance.db`. (Written under
    // some key and renamed: -sharedDb writes the same file format under that name.)
    mkdirSync(dbPath);
    const old = { accessKeyId: 'OLDHERALD', secretAccessKey: 'x' };
    engine = await startDynamo(dbPath, old);
    await ensureTable(engine.endpoint, 'herald', old);
    const before = client(old);
    await before.send(
      new PutItemCommand({ TableName: 'herald', Item: { pk: { S: 'ORG#1' }, sk: { S: 'KEY#1' } } }),
    );
    before.destroy();
    await engine.stop();
    renameSync(dynamoDbFile(dbPath, old), join(dbPath, 'shared-local-instance.db'));

    const credentials = dynamoCredentials(dir);
    engine = await startDynamo(dbPath, credentials);
    await ensureTable(engine.endpoint, 'herald', credentials);
    expect(existsSync(join(dbPath, 'shared-local-instance.db'))).toBe(false);
    expect(existsSync(dynamoDbFile(dbPath, credentials))).toBe(true);

    const owner = client(credentials);
    expect((await owner.send(new ListTablesCommand({}))).TableNames).toEqual(['herald']);
    const got = await owner.send(
      new GetItemCommand({ TableName: 'herald', Key: { pk: { S: 'ORG#1' }, sk: { S: 'KEY#1' } } }),
    );
    expect(got.Item?.sk).toEqual({ S: 'KEY#1' });
    owner.destroy();

    const strangers: Array<[LocalCredentials, string]> = [
      [{ accessKeyId: 'local', secretAccessKey: 'local' }, LOCAL_REGION],
      [{ accessKeyId: 'HERALD0123456789ABCDEF', secretAccessKey: 'guess' }, LOCAL_REGION],
      [old, LOCAL_REGION],
      // The right key in another region is another database too.
      [credentials, 'eu-west-1'],
    ];
    for (const [creds, region] of strangers) {
      const stranger = client(creds, region);
      expect((await stranger.send(new ListTablesCommand({}))).TableNames).toEqual([]);
      await expect(stranger.send(new DescribeTableCommand({ TableName: 'herald' }))).rejects.toBeInstanceOf(
        ResourceNotFoundException,
      );
      stranger.destroy();
    }

    // The local stack's clients send no computed signature (bin/local/stand-in-signing.ts): the
    // key and the region in their header still choose the database, and nothing else is read.
    const standIn = (creds: LocalCredentials, region: string) =>
      signForStandIns(client(creds, region), { accessKeyId: creds.accessKeyId, region, service: 'dynamodb' });
    const lean = standIn(credentials, LOCAL_REGION);
    expect(lean.middlewareStack.identify().some((m) => m.startsWith('httpSigningMiddleware'))).toBe(false);
    const leanGot = await lean.send(
      new GetItemCommand({ TableName: 'herald', Key: { pk: { S: 'ORG#1' }, sk: { S: 'KEY#1' } } }),
    );
    expect(leanGot.Item?.sk).toEqual({ S: 'KEY#1' });
    lean.destroy();
    for (const [creds, region] of strangers) {
      const stranger = standIn(creds, region);
      expect((await stranger.send(new ListTablesCommand({}))).TableNames).toEqual([]);
      stranger.destroy();
    }
  }, 60_000);
});
