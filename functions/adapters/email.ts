import { once } from '#core/once';
import { logger } from '#shared/logger';

// E-mail through SES, sent as the operator's configured sender (HERALD_NOTIFY_FROM): the webhook
// failure warnings to owners and the console's enrollment links. Without a sender there is nobody to
// send as: the caller still has what it would have sent (the warning's state, the link shown to the
// inviter), so nothing is lost but the mail.

// The SES client is loaded on the first mail, not at init: the functions that may send one (an
// invitation, a failure warning) mostly never do.
const ses = once(async () => {
  const { SESv2Client, SendEmailCommand } = await import('@aws-sdk/client-sesv2');
  return { client: new SESv2Client({ maxAttempts: 3 }), SendEmailCommand };
});

/**
 * Sends a plain-text mail; false when no sender is configured or there is nobody to send to.
 * `what` names the mail in the log line (never its text, which may carry a link's secret).
 */
export async function sendEmail(mail: {
  to: string[];
  subject: string;
  text: string;
  what: string;
}): Promise<boolean> {
  const from = process.env.HERALD_NOTIFY_FROM;
  if (!from || mail.to.length === 0) {
    logger.warn(`${mail.what} not emailed`, { reason: from ? 'no recipient' : 'no sender configured' });
    return false;
  }
  const { client, SendEmailCommand } = await ses();
  await client.send(
    new SendEmailCommand({
      FromEmailAddress: from,
      Destination: { ToAddresses: mail.to },
      Content: { Simple: { Subject: { Data: mail.subject }, Body: { Text: { Data: mail.text } } } },
    }),
  );
  return true;
}
