import type { DispatchMessage } from '#core/messages';
import { sqsBatchHandler } from '#shared/sqs-batch';
import { dispatch } from '#usecases/schedule-dispatcher';

export const handler = sqsBatchHandler<DispatchMessage>(async (msg) => {
  await dispatch(msg);
});
