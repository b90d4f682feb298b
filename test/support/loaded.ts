import { spawn } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';

// `npm run test:loaded`: the whole suite with a CPU hog beside it (one busy thread per core), as on
// a laptop that is compiling something else. Shakes out tests whose waits assume an idle machine.
// The hog stops when the suite ends; extra arguments go to vitest.

const hogs = Array.from({ length: availableParallelism() }, () => new Worker('for (;;) {}', { eval: true }));
const suite = spawn('npx', ['vitest', 'run', ...process.argv.slice(2)], { stdio: 'inherit' });
suite.on('exit', async (code) => {
  await Promise.all(hogs.map((h) => h.terminate()));
  process.exit(code ?? 1);
});
