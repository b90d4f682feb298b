import { mkdirSync, rmSync } from 'node:fs';
import { UNIT_TMPDIR } from '../../vitest.config.ts';

// The unit tier's temporary files (every CDK synth's cdk.out, the staged ffmpeg layer, the CLI's
// scratch bundles) go under one directory per run, removed when the run ends: a worker the pool
// stops does not run its exit handlers, and synths alone left several GB in /tmp per run.

export default function setup(): () => void {
  mkdirSync(UNIT_TMPDIR, { recursive: true });
  return () => rmSync(UNIT_TMPDIR, { recursive: true, force: true });
}
