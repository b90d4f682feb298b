// GET /health, in the shape of the IETF health check draft (application/health+json): an overall
// `status` (pass, warn, fail), the release and commit, and one entry per check. Pure: the use case
// measures, this judges.

export type HealthStatus = 'pass' | 'warn' | 'fail';

export interface HealthCheck {
  readonly componentType: 'datastore' | 'component';
  readonly status: HealthStatus;
  /** When the observation was made (the table) or the component last ran (the sweeper). */
  readonly time?: string;
  readonly observedValue?: number;
  readonly observedUnit?: 'ms' | 's';
  /** What is wrong, for a warn or fail; no secrets, no organization data. */
  readonly output?: string;
}

export interface HealthReport {
  readonly status: HealthStatus;
  readonly version: string;
  readonly releaseId: string;
  readonly description: string;
  readonly checks: Readonly<Record<string, readonly HealthCheck[]>>;
}

/** How many sweeper periods may pass without a sweep before the scheduler counts as stopped. */
export const SWEEPER_MISSED_PERIODS = 3;

/**
 * The sweeper's check: `fail` when it last ran longer ago than SWEEPER_MISSED_PERIODS × its period
 * (scheduled posts are not going out), `warn` when it has not run yet (a new table's first minute),
 * `pass` otherwise.
 */
export function sweeperCheck(lastRun: number | null, now: number, everySeconds: number): HealthCheck {
  if (lastRun === null)
    return { componentType: 'component', status: 'warn', output: 'the schedule sweeper has not run yet' };
  const age = Math.max(0, Math.round((now - lastRun) / 1000));
  const limit = SWEEPER_MISSED_PERIODS * everySeconds;
  const seen = {
    componentType: 'component',
    time: new Date(lastRun).toISOString(),
    observedValue: age,
    observedUnit: 's',
  } as const;
  return age > limit
    ? {
        ...seen,
        status: 'fail',
        output: `the schedule sweeper last ran ${age} s ago (it runs every ${everySeconds} s)`,
      }
    : { ...seen, status: 'pass' };
}

/** The worst of the checks is the whole: any fail fails, else any warn warns. */
export function overallStatus(checks: Readonly<Record<string, readonly HealthCheck[]>>): HealthStatus {
  const all = Object.values(checks).flat();
  if (all.some((c) => c.status === 'fail')) return 'fail';
  if (all.some((c) => c.status === 'warn')) return 'warn';
  return 'pass';
}

/** The HTTP status of a report: a load balancer or monitor reads fail as down; warn is still up. */
export const healthHttpStatus = (status: HealthStatus): 200 | 503 => (status === 'fail' ? 503 : 200);
