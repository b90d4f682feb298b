import { jsonResponse, publicHandler } from '#shared/envelope';
import { logger } from '#shared/logger';

// An HTTP handler in the production envelope (Powertools' Lambda context, keys reset after each
// request) that appends a key, logs, waits for the test, and logs again. The path names the caller.

export const pauses = new Map<string, Promise<void>>();

export const handler = publicHandler(async (event) => {
  const who = event.rawPath.slice(1);
  logger.appendKeys({ caller: who });
  logger.warn(`${who} before`);
  await pauses.get(who);
  logger.warn(`${who} after`);
  return jsonResponse(200, { who });
});
