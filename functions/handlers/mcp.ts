import { ApiError } from '#core/errors';
import { publicHandler } from '#shared/envelope';
import { authenticateMcp, checkOrigin, handleMcp } from '#usecases/mcp';

/**
 * `/api/mcp`: POST only. A GET would open a server-sent-event stream that a stateless server can
 * never use (and a Lambda could never end), so every other method is answered here with 405.
 */
export const handler = publicHandler(async (event) => {
  if (event.requestContext.http.method !== 'POST')
    throw new ApiError('method_not_allowed', 'The MCP endpoint takes POST requests only.', {
      headers: { allow: 'POST' },
    });
  checkOrigin(event.headers ?? {});
  return handleMcp(event, await authenticateMcp(event.headers ?? {}));
});
