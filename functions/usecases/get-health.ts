import { probeTable } from '#adapters/table-probe';
import { type HealthCheck, type HealthReport, overallStatus, sweeperCheck } from '#core/health';

// GET /health: what a load balancer or uptime monitor should know, from one GetItem. The table
// answers; the schedule sweeper (which starts every scheduled post) ran within a few of its periods.

export async function getHealth(opts: {
  now: () => Date;
  /** The sweeper's period where this runs (the manifest's trigger: AWS's or the local stack's). */
  sweeperEverySeconds: number;
  version: string;
  commit: string;
}): Promise<HealthReport> {
  const probe = await probeTable();
  const now = opts.now();
  const table: HealthCheck = probe.ok
    ? {
        componentType: 'datastore',
        status: 'pass',
        time: now.toISOString(),
        observedValue: probe.ms,
        observedUnit: 'ms',
      }
    : {
        componentType: 'datastore',
        status: 'fail',
        time: now.toISOString(),
        observedValue: probe.ms,
        observedUnit: 'ms',
        output: probe.error,
      };
  const sweeper: HealthCheck = probe.ok
    ? sweeperCheck(probe.sweptAt, now.getTime(), opts.sweeperEverySeconds)
    : { componentType: 'component', status: 'fail', output: 'unknown: the table did not answer' };
  const checks = { 'dynamodb:table': [table], 'sweeper:lastRun': [sweeper] };
  return {
    status: overallStatus(checks),
    version: opts.version,
    releaseId: opts.commit,
    description: 'Herald',
    checks,
  };
}
