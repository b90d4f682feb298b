import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { AwsError, send } from './http.ts';

// SES v2 (REST): SendEmail only. Sent emails are kept in memory and logged, never delivered.

export interface SentEmail {
  from: string;
  to: string[];
  subject: string;
  text: string;
  at: Date;
}

interface SendEmailBody {
  FromEmailAddress?: string;
  Destination?: { ToAddresses?: string[] };
  Content?: {
    Simple?: { Subject?: { Data?: string }; Body?: { Text?: { Data?: string }; Html?: { Data?: string } } };
  };
}

const SEND_EMAIL_PATH = '/v2/email/outbound-emails';

export function createSes(log: (line: string) => void) {
  /** Every email SendEmail accepted, oldest first. */
  const emails: SentEmail[] = [];

  const sendEmail = (body: SendEmailBody) => {
    const to = body.Destination?.ToAddresses ?? [];
    const simple = body.Content?.Simple;
    if (!body.FromEmailAddress || to.length === 0 || !simple)
      throw new AwsError(
        'BadRequestException',
        'FromEmailAddress, Destination.ToAddresses and Content.Simple are required',
      );
    const email: SentEmail = {
      from: body.FromEmailAddress,
      to,
      subject: simple.Subject?.Data ?? '',
      text: simple.Body?.Text?.Data ?? simple.Body?.Html?.Data ?? '',
      at: new Date(),
    };
    emails.push(email);
    log(`email to ${to.join(', ')}: ${email.subject}`);
    return { MessageId: randomUUID() };
  };

  /** The REST route (POST /v2/email/outbound-emails); false for any other request. */
  const route = async (req: IncomingMessage, path: string, raw: string, res: ServerResponse) => {
    if (req.method !== 'POST' || path !== SEND_EMAIL_PATH) return false;
    try {
      send(res, 200, 'application/json', sendEmail(JSON.parse(raw || '{}') as SendEmailBody));
    } catch (err) {
      const type = err instanceof AwsError ? err.type : 'BadRequestException';
      send(res, 400, 'application/json', { message: (err as Error).message }, type);
    }
    return true;
  };

  return { emails, route };
}
