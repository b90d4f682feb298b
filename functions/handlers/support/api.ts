import { apiHandlers } from '#shared/http';
import { requestGate } from '#usecases/support/request-gate';

/** Every API operation's handler: the shared pipeline over the request gate's use cases. */
export const apiHandler = apiHandlers(requestGate);
