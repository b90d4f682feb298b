import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { writeFileDurably } from './durable-file.ts';

// The data directory's layout has a format number (format.json). `npm start` upgrades a directory
// written by an older Herald in place, step by step, and refuses one written by a newer Herald
// rather than reading it wrongly or starting empty beside it.

/** The layout this version writes. */
export const DATA_FORMAT = 2;

export interface UpgradeStep {
  /** The format this step upgrades from. */
  from: number;
  /** What it does, for the log line. */
  what: string;
  run(dir: string): void;
}

export class DataDirError extends Error {}

const formatFile = (dir: string) => join(dir, 'format.json');

/**
 * The format of `dir`: its format.json, else 1 when it holds data of a Herald from before format
 * numbers (a DynamoDB Local database), else null (a new directory).
 */
export function formatOf(dir: string): number | null {
  if (existsSync(formatFile(dir))) {
    const raw = JSON.parse(readFileSync(formatFile(dir), 'utf8')) as { format?: unknown };
    if (typeof raw.format !== 'number' || !Number.isInteger(raw.format))
      throw new DataDirError(`${formatFile(dir)} is not a Herald data format file`);
    return raw.format;
  }
  const db = join(dir, 'dynamodb');
  return existsSync(db) && readdirSync(db).some((f) => f.endsWith('.db')) ? 1 : null;
}

/**
 * Brings `dir` to DATA_FORMAT: writes the format of a new directory, runs the upgrade steps of an
 * older one in order (returning what they did), and refuses a newer one.
 */
export function prepareDataDir(dir: string, steps: readonly UpgradeStep[]): string[] {
  const format = formatOf(dir);
  const done: string[] = [];
  if (format !== null && format > DATA_FORMAT)
    throw new DataDirError(
      `${dir} was written by a newer Herald (data format ${format}; this version reads up to ${DATA_FORMAT}). ` +
        'Run that version, or point HERALD_DATA_DIR at another directory.',
    );
  for (let f = format ?? DATA_FORMAT; f < DATA_FORMAT; f++) {
    const step = steps.find((s) => s.from === f);
    if (!step) throw new DataDirError(`no upgrade from data format ${f} for ${dir}`);
    step.run(dir);
    done.push(step.what);
  }
  writeFileDurably(formatFile(dir), `${JSON.stringify({ format: DATA_FORMAT })}\n`);
  return done;
}

/** Where the engines keep their files under the data directory. */
export const DATA_SUBDIRS = ['dynamodb', 's3'] as const;

/**
 * Creates the data directory (readable by this user only) and its engines' folders, and makes
 * those folders owner-only even when an older Herald made them: the DynamoDB Local database files
 * hold API key hashes and sealed tokens, and the engine writes them with the default umask. A data
 * directory that already exists keeps its mode (HERALD_DATA_DIR may name a shared folder).
 */
export function ensureDataDir(dir: string): void {
  if (!existsSync(dir)) mkdirSync(dir, { recursive: true, mode: 0o700 });
  for (const d of DATA_SUBDIRS.map((s) => join(dir, s))) {
    mkdirSync(d, { recursive: true, mode: 0o700 });
    chmodSync(d, 0o700);
  }
}
