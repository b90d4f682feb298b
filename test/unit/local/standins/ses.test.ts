import { BadRequestException, SendEmailCommand } from '@aws-sdk/client-sesv2';
import { describe, expect, it } from 'vitest';
import { failure, lines, ses, standins, useStandins } from './fixture.ts';

// The SES (v2) stand-in through the real SDK client.

useStandins();

describe('SES stand-in', () => {
  it('captures a sent email and logs it', async () => {
    // Act
    const out = await ses.send(
      new SendEmailCommand({
        FromEmailAddress: 'herald@example.com',
        Destination: { ToAddresses: ['owner@example.com'] },
        Content: {
          Simple: { Subject: { Data: 'Webhook disabled' }, Body: { Text: { Data: 'It kept failing.' } } },
        },
      }),
    );

    // Assert
    expect(out.MessageId).toEqual(expect.any(String));
    expect(standins.emails.at(-1)).toEqual({
      from: 'herald@example.com',
      to: ['owner@example.com'],
      subject: 'Webhook disabled',
      text: 'It kept failing.',
      at: expect.any(Date),
    });
    expect(lines).toEqual(['email to owner@example.com: Webhook disabled']);
  });

  it('refuses an email without recipients with BadRequestException', async () => {
    // Act
    const err = await failure(
      ses.send(
        new SendEmailCommand({
          FromEmailAddress: 'herald@example.com',
          Destination: { ToAddresses: [] },
          Content: { Simple: { Subject: { Data: 's' }, Body: { Text: { Data: 't' } } } },
        }),
      ),
    );

    // Assert
    expect(err).toBeInstanceOf(BadRequestException);
    expect(lines).toEqual([]);
  });

  it('answers any other path with 404', async () => {
    // Act
    const res = await fetch(`${standins.endpoint}/v2/email/identities`);

    // Assert
    expect(res.status).toBe(404);
    expect(res.headers.get('x-amzn-errortype')).toBe('UnknownOperationException');
  });
});
