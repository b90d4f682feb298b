import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defineConfig } from 'vitest/config';

/** The unit tier's TMPDIR for this run (test/support/unit-tmpdir.ts makes it and removes it). */
export const UNIT_TMPDIR = join(tmpdir(), `herald-unit-${process.pid}`);

// Two tiers, chosen by folder: unit (mocked AWS clients, CDK assertions) and e2e (HTTP against the
// local stack that the e2e global setup starts and stops).
export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts'],
          // Vitest's default on two cores is one file at a time; most of a unit file's time is its
          // imports (the SDK, Powertools, the handlers), which two workers overlap.
          maxWorkers: 2,
          sequence: { groupOrder: 0 },
          globalSetup: ['test/support/unit-tmpdir.ts'],
          testTimeout: 20_000,
          hookTimeout: 180_000,
          env: {
            TABLE_NAME: 'herald-test',
            DELIVERY_QUEUE_URL: 'https://sqs.us-east-1.amazonaws.com/000000000000/herald-delivery',
            SCHEDULE_QUEUE_URL: 'https://sqs.us-east-1.amazonaws.com/000000000000/herald-schedule',
            EVENTS_QUEUE_URL: 'https://sqs.us-east-1.amazonaws.com/000000000000/herald-events',
            WEBHOOKS_QUEUE_URL: 'https://sqs.us-east-1.amazonaws.com/000000000000/herald-webhooks',
            CHANNEL_SYNC_QUEUE_URL: 'https://sqs.us-east-1.amazonaws.com/000000000000/herald-channelSync',
            UNPUBLISH_QUEUE_URL: 'https://sqs.us-east-1.amazonaws.com/000000000000/herald-unpublish',
            INBOX_REPLIES_QUEUE_URL: 'https://sqs.us-east-1.amazonaws.com/000000000000/herald-inboxReplies',
            WEBHOOK_SECRETS_KEY_ID: 'arn:aws:kms:us-east-1:000000000000:key/unit',
            CONNECTION_SECRETS_KEY_ID: 'arn:aws:kms:us-east-1:000000000000:key/connections',
            // Loopback is where the contract fakes listen (Mastodon and Bluesky go through the address check).
            HERALD_WEBHOOK_ALLOW_CIDRS: '127.0.0.0/8',
            WEBHOOK_LADDER_ARN: 'arn:aws:states:us-east-1:000000000000:stateMachine:herald-webhookLadder',
            HERALD_CURSOR_SECRET: 'unit-test-cursor-secret',
            HERALD_UPLOAD_BUCKET: 'herald-test-uploads',
            HERALD_MEDIA_BUCKET: 'herald-test-media',
            HERALD_MEDIA_BASE_URL: 'https://media.example',
            // completeMediaUpload's probe function (Lambda is mocked; tests answer its invocations).
            HERALD_PROBE_FUNCTION: 'probeMedia',
            AWS_REGION: 'us-east-1',
            AWS_ACCESS_KEY_ID: 'unit',
            AWS_SECRET_ACCESS_KEY: 'unit',
            POWERTOOLS_LOG_LEVEL: 'SILENT',
            AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
            TMPDIR: UNIT_TMPDIR,
          },
        },
      },
      {
        test: {
          name: 'e2e',
          include: ['test/e2e/**/*.test.ts'],
          // Mostly waiting on the local stack (and the crash tests on a visibility timeout), so
          // three files at a time even on two cores: the suite stays under fifteen minutes.
          maxWorkers: 3,
          sequence: { groupOrder: 1 },
          globalSetup: ['test/e2e/global-setup.ts'],
          // Generous: a test's budget covers its setup (the admin CLI, a workspace) and its waits on
          // background work; on a busy laptop both stretch. Waits inside tests stay well below it,
          // so a test that is really stuck says what it waited for rather than timing out.
          testTimeout: 90_000,
          hookTimeout: 120_000,
        },
      },
    ],
  },
});
