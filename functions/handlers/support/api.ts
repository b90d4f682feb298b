import { apiHandlers } from '#shared/http';
import { requestGate } from '#usecases/support/request-gate';

/** Every API operation's handler: the shared pipeline over the request gate's use cases. */
export const apiHandler = apiHandlers(requestGate);

/** The answer of an operation whose use case returns the body. */
export const ok = async (body: Promise<unknown>, status = 200) => ({ status, body: await body });
