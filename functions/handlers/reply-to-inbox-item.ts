import { ReplyToInboxItemBody } from '#core/requests';
import { apiHandler } from '#handlers/support/api';
import { replyToInboxItemByKey } from '#usecases/reply-to-inbox-item';

export const { handler, impl } = apiHandler(
  'replyToInboxItem',
  { body: ReplyToInboxItemBody },
  async ({ auth, params, body, headers, now, lambda, admitted }) => {
    const res = await replyToInboxItemByKey({
      orgId: auth.orgId,
      keyId: auth.keyId,
      itemId: params.id ?? '',
      body: body.body,
      idempotencyKey: headers['idempotency-key'],
      now,
      admitted,
      lambda,
    });
    return {
      status: res.status,
      rawBody: res.json,
      headers: res.replayed ? { 'idempotency-replayed': 'true' } : ({} as Record<string, string>),
    };
  },
);
