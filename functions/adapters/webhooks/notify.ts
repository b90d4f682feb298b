import { SESv2Client, SendEmailCommand } from '@aws-sdk/client-sesv2';
import { logger } from '#shared/logger';

// The owner's warning email (SES). Without a configured sender there is nobody to send as: the
// warning is still visible as `warned_at` and `state: warning`, and logged.

const ses = new SESv2Client({ maxAttempts: 3 });

export async function sendEmail(to: string[], subject: string, text: string): Promise<boolean> {
  const from = process.env.HERALD_NOTIFY_FROM;
  if (!from || to.length === 0) {
    logger.warn('webhook warning not emailed', { reason: from ? 'no owner email' : 'no sender configured' });
    return false;
  }
  await ses.send(
    new SendEmailCommand({
      FromEmailAddress: from,
      Destination: { ToAddresses: to },
      Content: { Simple: { Subject: { Data: subject }, Body: { Text: { Data: text } } } },
    }),
  );
  return true;
}
