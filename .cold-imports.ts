import { execFileSync } from 'node:child_process';
import { writeFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { build } from 'esbuild';
import { HERALD_ESBUILD } from './test/bench/cold-start.ts';
const dir = '/tmp/imports-cold';
const entries: Record<string, string> = {
  floor: join(dir, 'floor-src.mjs'),
  importMedia: 'functions/handlers/import-media.ts',
  getMedia: 'functions/handlers/get-media.ts',
  deleteMedia: 'functions/handlers/delete-media.ts',
  mediaImportWorker: 'functions/handlers/media-import-worker.ts',
  mediaImportDeadLetters: 'functions/handlers/media-import-dead-letters.ts',
  completeMediaUpload: 'functions/handlers/complete-media-upload.ts',
  listMedia: 'functions/handlers/list-media.ts',
};
writeFileSync(entries.floor!, "import { DynamoDBClient } from '@aws-sdk/client-dynamodb';\nexport const c = new DynamoDBClient({});\n");
for (const [id, entry] of Object.entries(entries))
  await build({ ...HERALD_ESBUILD, entryPoints: [entry], outfile: join(dir, `${id}.mjs`) });
const probe = join(dir, 'probe.mjs');
writeFileSync(probe, "const t = performance.now(); await import(process.argv[2]); process.stdout.write(String(performance.now() - t));");
const env = { ...process.env, TABLE_NAME: 't', AWS_REGION: 'us-east-1', HERALD_CURSOR_SECRET: 'x', HERALD_UPLOAD_BUCKET: 'u', HERALD_MEDIA_BUCKET: 'm', HERALD_MEDIA_BASE_URL: 'https://m', HERALD_PROBE_FUNCTION: 'p', MEDIA_IMPORT_QUEUE_URL: 'q', POWERTOOLS_LOG_LEVEL: 'SILENT', HERALD_API_URL: 'https://a' };
const samples: Record<string, number[]> = {};
for (let r = 0; r < 15; r++)
  for (const id of Object.keys(entries)) {
    const ms = Number(execFileSync(process.execPath, [probe, join(dir, `${id}.mjs`)], { env }).toString());
    (samples[id] ??= []).push(ms);
  }
const med = (a: number[]) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)]!;
const floor = med(samples.floor!);
for (const [id, s] of Object.entries(samples))
  console.log(`${id.padEnd(24)} ${med(s).toFixed(1).padStart(7)} ms  ${(med(s) / floor).toFixed(2)}x  ${(statSync(join(dir, `${id}.mjs`)).size / 1024).toFixed(0)} KiB`);
