import { healthHttpStatus } from '#core/health';
import { scheduleEverySeconds } from '#lib/operations';
import { inLambda } from '#shared/config';
import { publicHandler } from '#shared/envelope';
import { runningVersion } from '#shared/version';
import { getHealth } from '#usecases/get-health';

// GET /health (no API key): 200 pass or warn, 503 fail, as application/health+json. Never cached:
// each call looks again.

// The sweeper's period on the trigger this deployment runs it by (AWS's schedule, or the local
// stack's interval), read from the manifest both of them read.
const sweeperEverySeconds = scheduleEverySeconds('scheduleSweeper', inLambda() ? 'aws' : 'local');

export const handler = publicHandler(async () => {
  const report = await getHealth({ now: () => new Date(), sweeperEverySeconds, ...runningVersion() });
  return {
    statusCode: healthHttpStatus(report.status),
    headers: { 'content-type': 'application/health+json', 'cache-control': 'no-store' },
    body: JSON.stringify(report),
  };
});
