import { Webhook } from 'standardwebhooks';

// Standard Webhooks signing: one `v1,<base64>` signature per active secret, space-separated, so a
// receiver that knows either secret (during a rotation) verifies the message.

export function signedHeaders(
  secrets: string[],
  messageId: string,
  at: Date,
  body: string,
): Record<string, string> {
  return {
    'content-type': 'application/json',
    'user-agent': 'Herald-Webhooks/1.0',
    'webhook-id': messageId,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': secrets.map((s) => new Webhook(s).sign(messageId, at, body)).join(' '),
  };
}
