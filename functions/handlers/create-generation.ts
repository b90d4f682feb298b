import { CreateGenerationBody } from '#core/requests';
import { apiHandler } from '#handlers/support/api';
import { createGenerationOnce } from '#usecases/create-generation';

export const { handler, impl } = apiHandler(
  'createGeneration',
  { body: CreateGenerationBody },
  async ({ auth, body, headers, now, lambda, admitted }) => {
    const res = await createGenerationOnce({
      auth,
      input: body,
      idempotencyKey: headers['idempotency-key'],
      now,
      lambda,
      admitted: () => admitted(),
    });
    return {
      status: res.status,
      rawBody: res.json,
      headers: res.replayed ? { 'idempotency-replayed': 'true' } : ({} as Record<string, string>),
    };
  },
);
