import { readFileSync } from 'node:fs';
import { App } from 'aws-cdk-lib';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '#lib/herald-function';
import { readStageConfig, SETTING_KEYS, stageConfigFrom } from '#lib/stage';

// The per-stage settings of cdk.json and what synth refuses. The stack's use of them is tested in
// herald-stack.test.ts.

const CERT = 'arn:aws:acm:eu-west-1:123456789012:certificate/0d3c9e5a-1b2c-4d5e-8f90-a1b2c3d4e5f6';
const PROD = { publicUrl: 'https://herald.example.org', alarmEmail: 'ops@example.org' };
const prod = (entry: Record<string, unknown>, flags: Record<string, unknown> = {}) =>
  stageConfigFrom({ stage: 'prod', stages: { prod: entry }, ...flags }, { region: 'eu-west-1' });

describe('the committed file', () => {
  it('ships a dev entry only, with no values a careless deploy could pick up', () => {
    const cdk = JSON.parse(readFileSync(`${REPO_ROOT}/cdk.json`, 'utf8')) as {
      context: Record<string, unknown>;
    };
    expect(cdk.context.stage).toBe('dev');
    expect(cdk.context.stages).toEqual({ dev: {} });
    for (const key of SETTING_KEYS) expect(cdk.context, key).not.toHaveProperty(key);
  });

  it('is what readStageConfig reads: the stage picks its entry', () => {
    const app = new App({ context: { stage: 'prod', stages: { prod: PROD, dev: {} } } });
    const config = readStageConfig(app);
    expect(config).toMatchObject({ stage: 'prod', protectData: true, ...PROD });
  });
});

describe('a protected stage', () => {
  it('takes its settings from its entry', () => {
    const config = prod({
      ...PROD,
      notifySender: 'herald@example.org',
      mcpAllowedOrigins: ['https://a.example'],
    });
    expect(config).toMatchObject({
      publicUrl: 'https://herald.example.org',
      alarmEmail: 'ops@example.org',
      notifySender: 'herald@example.org',
      mcpAllowedOrigins: ['https://a.example'],
      docsUrl: undefined,
      domain: undefined,
    });
  });

  it('is refused without a public URL, naming the file and the key', () => {
    expect(() => prod({ alarmEmail: PROD.alarmEmail })).toThrow(
      /stage prod is protected and needs publicUrl \(or domainName\) in context\.stages\.prod of cdk\.json/,
    );
  });

  it('is refused without an alarm email', () => {
    expect(() => prod({ publicUrl: PROD.publicUrl })).toThrow(/needs alarmEmail in context\.stages\.prod/);
  });

  it('is refused with no entry at all, naming both keys', () => {
    expect(() => stageConfigFrom({ stage: 'staging', stages: { dev: {} } })).toThrow(
      /needs publicUrl \(or domainName\) and alarmEmail in context\.stages\.staging of cdk\.json/,
    );
  });

  it('refuses a -c flag that differs from the committed value', () => {
    expect(() => prod(PROD, { publicUrl: 'https://other.example.org' })).toThrow(
      /-c publicUrl=https:\/\/other\.example\.org differs from context\.stages\.prod\.publicUrl in cdk\.json.*edit the file/,
    );
    // A flag for a setting the entry does not have differs too: the file is the only source.
    expect(() => prod(PROD, { notifySender: 'x@example.org' })).toThrow(
      /notifySender=x@example\.org differs/,
    );
    // The old way of deploying prod, flags only, is refused.
    expect(() => stageConfigFrom({ stage: 'prod', ...PROD })).toThrow(/differs from context\.stages\.prod/);
  });

  it('accepts a flag equal to the committed value (by meaning, not spelling)', () => {
    expect(prod(PROD, { publicUrl: 'https://herald.example.org/' }).publicUrl).toBe(PROD.publicUrl);
    expect(
      prod(
        { ...PROD, mcpAllowedOrigins: ['https://a.example', 'https://b.example'] },
        {
          mcpAllowedOrigins: 'https://a.example, https://b.example',
        },
      ).mcpAllowedOrigins,
    ).toEqual(['https://a.example', 'https://b.example']);
  });

  it('refuses unknown keys in its entry (a typo would otherwise be ignored)', () => {
    expect(() => prod({ ...PROD, alarmEmial: 'ops@example.org' })).toThrow(
      /unknown setting alarmEmial in context\.stages\.prod of cdk\.json/,
    );
  });

  it('refuses an entry that is not an object', () => {
    expect(() => prod('https://herald.example.org' as unknown as Record<string, unknown>)).toThrow(
      /invalid context\.stages\.prod/,
    );
    expect(() => stageConfigFrom({ stage: 'prod', stages: ['prod'] })).toThrow(/invalid "stages"/);
  });
});

describe('dev', () => {
  it('needs nothing, and takes -c flags over its entry', () => {
    expect(stageConfigFrom({ stage: 'dev', stages: { dev: {} } })).toMatchObject({
      protectData: false,
      publicUrl: undefined,
      alarmEmail: undefined,
      domain: undefined,
    });
    const config = stageConfigFrom({
      stage: 'dev',
      stages: { dev: { alarmEmail: 'a@example.org', publicUrl: 'https://a.example.org' } },
      alarmEmail: 'b@example.org',
    });
    expect(config.alarmEmail).toBe('b@example.org');
    expect(config.publicUrl).toBe('https://a.example.org');
  });

  it('still validates what it is given', () => {
    expect(() => stageConfigFrom({ publicUrl: 'http://a.example.org' })).toThrow(/invalid publicUrl/);
    expect(() => stageConfigFrom({ stages: { dev: { docsUrl: 'ftp://x' } } })).toThrow(/invalid docsUrl/);
  });
});

describe('docsUrl', () => {
  it("defaults to none: the deployment's own /docs", () => {
    expect(stageConfigFrom({}).docsUrl).toBeUndefined();
    expect(prod({ ...PROD, docsUrl: 'https://docs.example.org/herald/' }).docsUrl).toBe(
      'https://docs.example.org/herald',
    );
  });
});

describe('a custom domain', () => {
  const domain = { domainName: 'herald.example.org', certificateArn: CERT };

  it('parses name, certificate and zone, and implies the public URL', () => {
    const config = prod({ ...domain, hostedZoneId: 'Z0123456789ABCDEFGHIJ', alarmEmail: PROD.alarmEmail });
    expect(config.domain).toEqual({
      name: 'herald.example.org',
      certificateArn: CERT,
      hostedZoneId: 'Z0123456789ABCDEFGHIJ',
    });
    expect(config.publicUrl).toBe('https://herald.example.org');
  });

  it('leaves the zone out when none is given (the operator adds the DNS record)', () => {
    expect(prod({ ...domain, alarmEmail: PROD.alarmEmail }).domain).toEqual({
      name: 'herald.example.org',
      certificateArn: CERT,
    });
  });

  it('accepts a publicUrl only when it is https://<domainName>', () => {
    expect(prod({ ...domain, ...PROD }).publicUrl).toBe('https://herald.example.org');
    expect(() => prod({ ...domain, ...PROD, publicUrl: 'https://api.example.org' })).toThrow(
      /publicUrl https:\/\/api\.example\.org differs from domainName herald\.example\.org/,
    );
  });

  it('needs a certificate', () => {
    expect(() => prod({ domainName: 'herald.example.org', ...PROD })).toThrow(/needs certificateArn/);
  });

  it('refuses a certificate or zone without a domain', () => {
    expect(() => prod({ ...PROD, certificateArn: CERT })).toThrow(/certificateArn is set without domainName/);
    expect(() => prod({ ...PROD, hostedZoneId: 'Z0123456789' })).toThrow(
      /hostedZoneId is set without domainName/,
    );
  });

  it('refuses what is not a hostname', () => {
    for (const bad of [
      'https://herald.example.org',
      'Herald.example.org',
      'herald',
      '*.example.org',
      'herald.example.org:443',
      '-x.example.org',
      '10.0.0.1',
      'herald.example.org.',
    ])
      expect(() => prod({ ...domain, domainName: bad, alarmEmail: PROD.alarmEmail }), bad).toThrow(
        /invalid domainName/,
      );
  });

  it('refuses what is not an ACM certificate ARN', () => {
    for (const bad of ['cert-123', CERT.replace(':acm:', ':iam:'), `${CERT}x`])
      expect(() => prod({ ...domain, certificateArn: bad, alarmEmail: PROD.alarmEmail }), bad).toThrow(
        /invalid certificateArn/,
      );
  });

  it("refuses a certificate from another region than the stack's (a regional domain)", () => {
    const east = CERT.replace('eu-west-1', 'us-east-1');
    expect(() => prod({ ...domain, certificateArn: east, alarmEmail: PROD.alarmEmail })).toThrow(
      /certificateArn is in us-east-1 but the stack deploys to eu-west-1/,
    );
    // Without a known region (an environment-agnostic synth) the ARN's form is all that is checked.
    expect(
      stageConfigFrom({
        stage: 'prod',
        stages: { prod: { ...domain, certificateArn: east, alarmEmail: PROD.alarmEmail } },
      }).domain?.certificateArn,
    ).toBe(east);
  });

  it('refuses what is not a Route 53 zone id', () => {
    for (const bad of ['zone-1', 'z0123', '/hostedzone/Z0123'])
      expect(() => prod({ ...domain, hostedZoneId: bad, alarmEmail: PROD.alarmEmail }), bad).toThrow(
        /invalid hostedZoneId/,
      );
  });
});

describe('the inbox settings', () => {
  it('default to the functions’ own (90 days, every platform polled)', () => {
    expect(stageConfigFrom({ stage: 'dev' }).inbox).toEqual({
      retentionDays: undefined,
      disabledPlatforms: [],
    });
  });

  it('take a retention of 1–3650 days and platform names (an array, or a comma-separated flag)', () => {
    const config = stageConfigFrom({
      stage: 'dev',
      stages: { dev: { inboxRetentionDays: 30, inboxDisabledPlatforms: ['x', 'youtube', 'x'] } },
    });
    expect(config.inbox).toEqual({ retentionDays: 30, disabledPlatforms: ['x', 'youtube'] });
    expect(
      stageConfigFrom({ inboxDisabledPlatforms: 'x, threads', inboxRetentionDays: '3650' }).inbox,
    ).toEqual({
      retentionDays: 3650,
      disabledPlatforms: ['threads', 'x'],
    });
  });

  it('refuse a retention out of range and a name that is not a platform', () => {
    for (const bad of [0, 3651, 1.5, 'long'])
      expect(() => stageConfigFrom({ inboxRetentionDays: bad }), String(bad)).toThrow(
        /invalid inboxRetentionDays/,
      );
    expect(() => stageConfigFrom({ inboxDisabledPlatforms: ['x', 'myspace'] })).toThrow(
      /invalid inboxDisabledPlatforms entry "myspace"/,
    );
    expect(() => stageConfigFrom({ inboxDisabledPlatforms: { x: true } })).toThrow(
      /invalid inboxDisabledPlatforms/,
    );
  });
});
