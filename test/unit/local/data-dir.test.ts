import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  DATA_FORMAT,
  DataDirError,
  ensureDataDir,
  formatOf,
  prepareDataDir,
  type UpgradeStep,
} from '../../../bin/local/data-dir.ts';

// The data directory's format: new directories get the current one, older ones are upgraded step
// by step, newer ones are refused (never read wrongly, never started empty beside).

let dir = '';
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'herald-data-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const ran: number[] = [];
const steps: UpgradeStep[] = Array.from({ length: DATA_FORMAT - 1 }, (_, i) => ({
  from: i + 1,
  what: `step from ${i + 1}`,
  run: () => {
    ran.push(i + 1);
  },
}));
const written = () => JSON.parse(readFileSync(join(dir, 'format.json'), 'utf8')) as { format: number };

describe('prepareDataDir', () => {
  beforeEach(() => {
    ran.length = 0;
  });

  it('writes the current format into a new directory and runs no step', () => {
    expect(formatOf(dir)).toBeNull();
    expect(prepareDataDir(dir, steps)).toEqual([]);
    expect(ran).toEqual([]);
    expect(written()).toEqual({ format: DATA_FORMAT });
  });

  it('recognizes a directory of a Herald before format numbers (a database, no format.json) and upgrades it', () => {
    mkdirSync(join(dir, 'dynamodb'));
    writeFileSync(join(dir, 'dynamodb', 'shared-local-instance.db'), 'x');

    const done = prepareDataDir(dir, steps);

    expect(done).toEqual(steps.map((s) => s.what));
    expect(ran).toEqual(steps.map((s) => s.from));
    expect(written()).toEqual({ format: DATA_FORMAT });
    expect(prepareDataDir(dir, steps)).toEqual([]);
  });

  it('refuses a directory of a newer Herald, saying what to do, and leaves it as it is', () => {
    writeFileSync(join(dir, 'format.json'), JSON.stringify({ format: DATA_FORMAT + 1 }));
    expect(() => prepareDataDir(dir, steps)).toThrow(DataDirError);
    expect(() => prepareDataDir(dir, steps)).toThrow(/newer Herald.*HERALD_DATA_DIR/);
    expect(written()).toEqual({ format: DATA_FORMAT + 1 });
  });

  it('refuses an unreadable format file', () => {
    writeFileSync(join(dir, 'format.json'), JSON.stringify({ format: 'two' }));
    expect(() => prepareDataDir(dir, steps)).toThrow(/not a Herald data format file/);
  });
});

describe('ensureDataDir', () => {
  const mode = (p: string) => statSync(p).mode & 0o777;

  it("makes the directory and the engines' folders readable by this user only", () => {
    const fresh = join(dir, 'fresh');
    ensureDataDir(fresh);
    expect([fresh, join(fresh, 'dynamodb'), join(fresh, 's3')].map(mode)).toEqual([0o700, 0o700, 0o700]);
  });

  it("tightens the engines' folders an older Herald made open, and leaves an existing directory's own mode", () => {
    mkdirSync(join(dir, 'dynamodb'));
    chmodSync(dir, 0o755);
    chmodSync(join(dir, 'dynamodb'), 0o777);
    ensureDataDir(dir);
    expect([dir, join(dir, 'dynamodb'), join(dir, 's3')].map(mode)).toEqual([0o755, 0o700, 0o700]);
  });
});
