import { writeFile } from 'node:fs/promises';
import { beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { clearOpened } from '#adapters/sealed';
import type { OperationId } from '#core/contracts';
import { PLANS } from '#core/plans';
import { clearAuthCache } from '#usecases/support/authenticate';
import { validRequest } from '../fuzz/inputs.ts';
import {
  type FuzzRequest,
  KEYS,
  keyedOperations,
  LINKEDIN_CHANNEL,
  loadHandlers,
  type Outcome,
  send,
  UPLOADED_VIDEO,
} from '../fuzz/world.ts';
import type { CounterStart } from '../support/fixtures.ts';

// "A refused request writes nothing" (docs/api/limits.md, the request gate), counted on every client:
// a request the gate refuses (a key revoked at the gate, a spent burst, a spent month) makes no
// AWS call but reads of the table and the gate's own refused UpdateItem. No write on either
// DynamoDB client (the Powertools idempotency record included), no S3 call (a probe's reads
// included), no SQS, no KMS (sealing or opening), nothing out of the process, no ffprobe/ffmpeg.

// Every name resolves into private space: no network (as in the fuzz world's own tests).
vi.mock('node:dns', async (importOriginal) =>
  (await import('../fuzz/private-dns.ts')).privateDns(importOriginal),
);

const tools = vi.hoisted(() => ({ ffprobe: vi.fn(), posterFrame: vi.fn() }));
vi.mock('#adapters/media-tools', async (orig) => ({
  ...(await orig<typeof import('#adapters/media-tools')>()),
  ffprobe: tools.ffprobe,
  posterFrame: tools.posterFrame,
}));

beforeAll(loadHandlers, 60_000);

beforeEach(() => {
  // Opened secrets stay in the container's memory; forget them so every KMS open is seen.
  clearOpened();
  // A key the gate found revoked stays refused by this container's cache, before the gate.
  clearAuthCache();
  tools.ffprobe.mockReset().mockResolvedValue({
    durationSec: 2.5,
    width: 320,
    height: 240,
    hasVideo: true,
    hasAudio: true,
    formatName: 'mov,mp4,m4a,3gp,3g2,mj2',
    videoCodec: 'h264',
    audioCodec: 'aac',
  });
  tools.posterFrame.mockReset().mockImplementation(async (_in: string, out: string) => {
    await writeFile(out, Buffer.from([0xff, 0xd8, 0xff, 0xd9]));
    return out;
  });
});

const TEAM = PLANS.team.limits;
const REFUSALS: Array<[string, CounterStart, number, string]> = [
  ['a key revoked at the gate', { revoked: true }, 401, 'invalid_api_key'],
  ['a spent burst', { burst: TEAM.burst }, 429, 'rate_limited'],
  ['a spent month', { api_requests: TEAM.api_requests }, 429, 'quota_exhausted'],
];

/** What a refused request may do: read the table, and try the gate's write (refused by its condition). */
const ALLOWED = new Set([
  'ddb:GetCommand',
  'ddb:BatchGetCommand',
  'ddb:QueryCommand',
  'ddb:UpdateCommand (gate)',
]);

/** Each operation's baseline request (the full key: every scope, team plan), and the costly variants. */
const REQUESTS: Array<[string, FuzzRequest]> = [
  ...keyedOperations.map((op): [string, FuzzRequest] => [op.id, validRequest(op.id as OperationId)]),
  [
    'createPost with an Idempotency-Key',
    {
      ...validRequest('createPost'),
      headers: { ...validRequest('createPost').headers, 'idempotency-key': 'refused-retry-1' },
    },
  ],
  [
    'completeMediaUpload of an uploaded video',
    {
      op: 'completeMediaUpload',
      headers: validRequest('getPost').headers,
      params: { id: UPLOADED_VIDEO.id },
    },
  ],
  [
    'disconnectChannel of a LinkedIn channel (revoked at LinkedIn)',
    { op: 'disconnectChannel', headers: validRequest('getPost').headers, params: { id: LINKEDIN_CHANNEL } },
  ],
];

const problemCode = (o: Outcome) => (JSON.parse(o.res?.body ?? '{}') as { code?: string }).code;

describe('a request the gate refuses makes no write and no costly call on any client', () => {
  it('drives every operation that takes an API key', () => {
    expect(REQUESTS.length).toBeGreaterThan(keyedOperations.length);
    for (const [, req] of REQUESTS) expect(req.headers?.authorization).toContain(KEYS.full.key);
  });

  describe.each(REFUSALS)('%s', (_why, start, status, code) => {
    it.each(REQUESTS)('%s', async (_name, req) => {
      // Act
      const o = await send(req, start);

      // Assert
      expect(o.res?.statusCode, o.res?.body).toBe(status);
      expect(problemCode(o)).toBe(code);
      expect(o.calls.filter((c) => !ALLOWED.has(c))).toEqual([]);
      expect(o.calls).toContain('ddb:UpdateCommand (gate)');
      expect(o.network).toEqual([]);
      expect(tools.ffprobe).not.toHaveBeenCalled();
      expect(tools.posterFrame).not.toHaveBeenCalled();
    });
  });
});

describe('the same requests admitted reach the calls the refusals must not make', () => {
  it.each<[string, FuzzRequest, string[]]>([
    [
      'createPost with an Idempotency-Key',
      REQUESTS.find(([n]) => n.includes('Idempotency'))![1],
      ['dynamo:PutItemCommand'],
    ],
    [
      'completeMediaUpload of an uploaded video',
      REQUESTS.find(([n]) => n.includes('uploaded video'))![1],
      // The probe function's invocation, then its download and poster (it runs in-process here).
      [
        's3:HeadObjectCommand',
        's3:GetObjectCommand',
        's3:CopyObjectCommand',
        's3:PutObjectCommand',
        'lambda:InvokeCommand',
      ],
    ],
    [
      'selectChannelAccount',
      validRequest('selectChannelAccount'),
      ['kms:DecryptCommand', 'kms:GenerateDataKeyCommand'],
    ],
    ['disconnectChannel', validRequest('disconnectChannel'), ['kms:DecryptCommand']],
  ])('%s', async (_name, req, expected) => {
    const o = await send(req);
    expect(o.res?.statusCode, o.res?.body).toBeLessThan(300);
    for (const call of expected) expect(o.calls).toContain(call);
    if (req.op === 'completeMediaUpload') expect(tools.ffprobe).toHaveBeenCalledOnce();
  });
});
