import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { writeFileDurably } from './durable-file.ts';

// What a running local stack tells the admin CLI (and tests): where its services listen.

export interface LocalStackInfo {
  pid: number;
  baseUrl: string;
  dynamodbEndpoint: string;
  /** DynamoDB Local serves this stack's tables only to this key (see `dynamoCredentials`). */
  dynamodbCredentials: { accessKeyId: string; secretAccessKey: string };
  sqsEndpoint: string;
  s3Endpoint?: string;
  tableName: string;
  /** Environment the admin CLI applies to reach this stack's stand-ins and knobs. */
  cliEnv?: Record<string, string>;
  queues: Record<string, { url: string; dlqUrl: string }>;
}

/** The region of every local stand-in (kept here so the admin CLI need not load services.ts). */
export const LOCAL_REGION = 'us-east-1';

export const dataDir = () => resolve(process.env.HERALD_DATA_DIR || '.herald');
const stackFile = (dir: string) => join(dir, 'stack.json');

/** Mode 600, like the secrets: it holds DynamoDB Local's access key. */
export function writeStackInfo(dir: string, info: LocalStackInfo): void {
  writeFileDurably(stackFile(dir), `${JSON.stringify(info, null, 2)}\n`, 0o600);
}

export function removeStackInfo(dir: string): void {
  rmSync(stackFile(dir), { force: true });
}

export function readStackInfo(dir: string): LocalStackInfo | null {
  if (!existsSync(stackFile(dir))) return null;
  const info = JSON.parse(readFileSync(stackFile(dir), 'utf8')) as LocalStackInfo;
  try {
    process.kill(info.pid, 0);
  } catch {
    return null;
  }
  return info;
}

/** Local secrets are made once per data directory (by `make`) and kept there (mode 600). */
export function localSecret(
  dir: string,
  name: string,
  make: () => string = () => randomBytes(32).toString('base64url'),
): string {
  const file = join(dir, `${name}.secret`);
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  mkdirSync(dir, { recursive: true });
  const value = make();
  // Durably: data sealed with a secret (the KMS one) is unreadable without it.
  writeFileDurably(file, value, 0o600);
  return value;
}
