import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

// bin/herald.js runs the CLI's bundle when it is fresh, rebuilds it when it is missing or older than
// a source, and runs the TypeScript through tsx when it cannot build. Each case builds in its own
// directory (HERALD_CLI_BUNDLE), never in the repository's .build.

const run = promisify(execFile);
const root = join(import.meta.dirname, '../../..');
const nowhere = mkdtempSync(join(tmpdir(), 'herald-cli-data-'));

async function herald(bundle: string, ...args: string[]) {
  const env = { ...process.env, HERALD_DATA_DIR: nowhere, HERALD_CLI_BUNDLE: bundle };
  try {
    const { stdout, stderr } = await run(process.execPath, [join(root, 'bin/herald.js'), ...args], {
      cwd: root,
      env,
    });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

/** The same command from the TypeScript source, as the CLI ran before it was bundled. */
async function fromSource(...args: string[]) {
  try {
    const { stdout, stderr } = await run(
      process.execPath,
      ['--import', 'tsx', join(root, 'bin/herald.ts'), ...args],
      {
        cwd: root,
        env: {
          ...process.env,
          HERALD_DATA_DIR: nowhere,
          AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
        },
      },
    );
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

const scratch = () => join(mkdtempSync(join(tmpdir(), 'herald-cli-bundle-')), 'herald.mjs');

/** A stand-in bundle that says it ran, listing `inputs` as what it was built from. */
function fakeBundle(bundle: string, inputs: string[], builtAt?: Date) {
  writeFileSync(bundle, "process.stdout.write('from the bundle\\n');\n");
  writeFileSync(`${bundle}.inputs.json`, JSON.stringify(inputs));
  if (builtAt) utimesSync(bundle, builtAt, builtAt);
}

describe('the admin CLI bundle', () => {
  it('builds a missing bundle and answers as the source does', async () => {
    const bundle = scratch();
    const help = await herald(bundle, '--help');
    expect(help.code).toBe(2);
    expect(help.stderr).toMatch(/^\nUsage: herald <command>/);
    expect(statSync(bundle).size).toBeGreaterThan(0);
    expect(JSON.parse(readFileSync(`${bundle}.inputs.json`, 'utf8'))).toContain('bin/herald.ts');
    for (const args of [
      ['--help'],
      ['org', 'create', '--name', 'A', '--plan', 'gold', '--owner-email', 'a@b.co', '--json'],
      ['key', 'list', '--org', 'org_x', '--json'],
      ['key', 'list', '--org', 'org_x'],
    ])
      expect(await herald(bundle, ...args), args.join(' ')).toEqual(await fromSource(...args));
  });

  it('runs a fresh bundle as it is', async () => {
    const bundle = scratch();
    fakeBundle(bundle, ['bin/herald.ts', 'package.json']);
    expect(await herald(bundle, '--help')).toMatchObject({
      code: 0,
      stdout: 'from the bundle\n',
      stderr: '',
    });
  });

  it('rebuilds a bundle older than a source, or one whose source is gone', async () => {
    const stale = scratch();
    fakeBundle(stale, ['bin/herald.ts'], new Date('2001-01-01'));
    const gone = scratch();
    fakeBundle(gone, ['bin/no-such-source.ts']);
    for (const bundle of [stale, gone]) {
      const res = await herald(bundle, '--help');
      expect(res).toMatchObject({ code: 2, stdout: '' });
      expect(res.stderr).toMatch(/^\nUsage: herald <command>/);
      expect(readFileSync(bundle, 'utf8')).not.toContain('from the bundle');
    }
  });

  it('runs from source, saying so on one line, when it cannot build', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'herald-cli-bundle-'));
    writeFileSync(join(dir, 'file'), '');
    const res = await herald(join(dir, 'file', 'herald.mjs'), '--help');
    expect(res.code).toBe(2);
    const [note, ...rest] = res.stderr.split('\n');
    expect(note).toMatch(/^herald: running from source \(slower\): could not build .*herald\.mjs: /);
    expect(rest.join('\n')).toMatch(/^\nUsage: herald <command>/);
  });
});
