import { benchColdStart } from './cold-start.ts';
const r = await benchColdStart({ runs: Number(process.env.RUNS ?? 15), only: ['getChannel', 'getChannelOptions', 'listChannels', 'disconnectChannel'], profileRuns: 0 });
console.log('floor', r.floor.initMs.toFixed(1), 'ms', r.floor.bytes, 'B; machine', r.machine);
for (const f of r.functions) console.log(f.id, f.initMs.toFixed(1), 'ms', 'ratio', f.ratio.toFixed(2), 'target', f.target, f.pass, f.bytes, 'B', f.gzipBytes, 'gz');
