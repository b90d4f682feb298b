import { ApiError } from '#core/errors';

/** The ApiError `fn` throws; fails the test when it throws nothing or something else. */
export function apiErrorOf(fn: () => unknown): ApiError {
  try {
    fn();
  } catch (err) {
    if (err instanceof ApiError) return err;
    throw new Error(`expected an ApiError, got ${String(err)}`);
  }
  throw new Error('expected an ApiError, nothing was thrown');
}

/** The ApiError `promise` rejects with. */
export async function rejectedApiError(promise: Promise<unknown>): Promise<ApiError> {
  try {
    await promise;
  } catch (err) {
    if (err instanceof ApiError) return err;
    throw new Error(`expected an ApiError, got ${String(err)}`);
  }
  throw new Error('expected an ApiError, the promise resolved');
}
