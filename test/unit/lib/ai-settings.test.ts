import { App } from 'aws-cdk-lib';
import type { Template } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { addHeraldStacks, type HeraldStacks } from '#lib/herald-stack';
import { applyNag } from '#lib/nag';
import { stageConfigFrom } from '#lib/stage';
import { mergedTemplate } from './stacks-view.ts';

// The stage's `ai` setting as it reaches the functions with `ai` access: their HERALD_AI_*
// environment and exactly the Bedrock or KMS grants the engine needs (syntheses without bundling,
// cdk-nag applied). createGeneration carries the flag, and the console's inbox (Suggest a reply),
// which gets exactly the same.

const ENV = { account: '111111111111', region: 'eu-west-1' };
const AI_FN = 'createGeneration';
const CONSOLE_AI_FN = 'consoleSuggest';

type Resource = { Type: string; Properties: Record<string, unknown> };
interface Statement {
  Action: string | string[];
  Resource: unknown;
  Condition?: unknown;
}

function synth(context: Record<string, unknown>): { stacks: HeraldStacks; template: Template } {
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [], ...context } });
  const stacks = addHeraldStacks(app, ENV);
  applyNag(app, stacks);
  app.synth(); // throws on any unacknowledged cdk-nag finding
  return { stacks, template: mergedTemplate(stacks.stacks) };
}

const resources = (t: Template) => Object.entries(t.toJSON().Resources as Record<string, Resource>);

/** Every statement of every policy, by the function whose role it is attached to. */
function statementsOf(s: { stacks: HeraldStacks; template: Template }, id: string): Statement[] {
  const role = s.stacks.functionOf(id).role;
  const roleId = role ? s.stacks.functionOf(id).stack.getLogicalId(role.node.defaultChild as never) : '';
  return resources(s.template)
    .filter(([, r]) => r.Type === 'AWS::IAM::Policy')
    .filter(([, r]) => (r.Properties.Roles as Array<{ Ref: string }>).some((x) => x.Ref === roleId))
    .flatMap(([, r]) => (r.Properties.PolicyDocument as { Statement: Statement[] }).Statement);
}

const actions = (s: Statement) => (Array.isArray(s.Action) ? s.Action : [s.Action]);
const bedrockOf = (statements: Statement[]) =>
  statements.filter((s) => actions(s).some((a) => a.startsWith('bedrock:')));

function environmentOf(s: { stacks: HeraldStacks; template: Template }, id: string): Record<string, unknown> {
  const fn = s.stacks.functionOf(id);
  const logicalId = fn.stack.getLogicalId(fn.node.defaultChild as never);
  const resource = s.template.toJSON().Resources[logicalId] as Resource;
  return (resource.Properties.Environment as { Variables: Record<string, unknown> }).Variables;
}

/** Every policy's statements of every role: none but the AI function's may name bedrock. */
function everyBedrockStatement(s: { template: Template }): Statement[] {
  return bedrockOf(
    resources(s.template)
      .filter(([, r]) => r.Type === 'AWS::IAM::Policy')
      .flatMap(([, r]) => (r.Properties.PolicyDocument as { Statement: Statement[] }).Statement),
  );
}

const PROFILE = 'eu.anthropic.claude-3-5-haiku-20241022-v1:0';
const MODEL = 'anthropic.claude-3-5-haiku-20241022-v1:0';

describe('the ai setting', () => {
  it('without it: no bedrock statement and no HERALD_AI_* anywhere', () => {
    const s = synth({ stage: 'dev' });
    expect(everyBedrockStatement(s)).toEqual([]);
    expect(JSON.stringify(s.template.toJSON())).not.toContain('HERALD_AI_');
  }, 180_000);

  it('an inference profile with a guardrail: InvokeModel on the profile and its model in each destination region, ApplyGuardrail on the guardrail', () => {
    const s = synth({
      stage: 'dev',
      ai: {
        bedrock: {
          modelId: PROFILE,
          regions: ['eu-west-3', 'eu-central-1', 'eu-west-1'],
          guardrail: { id: 'gr7abc', version: 2 },
        },
        images: true,
      },
    });
    const partition = { Ref: 'AWS::Partition' };
    const join = (...parts: unknown[]) => ({ 'Fn::Join': ['', parts] });
    expect(bedrockOf(statementsOf(s, AI_FN))).toEqual([
      {
        Action: 'bedrock:InvokeModel',
        Effect: 'Allow',
        Resource: [
          join('arn:', partition, `:bedrock:eu-west-1:111111111111:inference-profile/${PROFILE}`),
          join('arn:', partition, `:bedrock:eu-central-1::foundation-model/${MODEL}`),
          join('arn:', partition, `:bedrock:eu-west-1::foundation-model/${MODEL}`),
          join('arn:', partition, `:bedrock:eu-west-3::foundation-model/${MODEL}`),
        ],
      },
      {
        Action: 'bedrock:ApplyGuardrail',
        Effect: 'Allow',
        Resource: join('arn:', partition, ':bedrock:eu-west-1:111111111111:guardrail/gr7abc'),
      },
    ]);
    expect(bedrockOf(statementsOf(s, CONSOLE_AI_FN))).toEqual(bedrockOf(statementsOf(s, AI_FN)));
    // Only the AI functions' roles name bedrock.
    expect(everyBedrockStatement(s)).toHaveLength(4);
    expect(environmentOf(s, AI_FN)).toMatchObject({
      HERALD_AI_BEDROCK_MODEL_ID: PROFILE,
      HERALD_AI_BEDROCK_GUARDRAIL_ID: 'gr7abc',
      HERALD_AI_BEDROCK_GUARDRAIL_VERSION: '2',
      HERALD_AI_IMAGES: 'true',
    });
    expect(environmentOf(s, AI_FN)).not.toHaveProperty('HERALD_AI_BEDROCK_REGION');
    expect(environmentOf(s, CONSOLE_AI_FN)).toMatchObject({ HERALD_AI_BEDROCK_MODEL_ID: PROFILE });
    expect(environmentOf(s, 'listPosts')).not.toHaveProperty('HERALD_AI_BEDROCK_MODEL_ID');
  }, 180_000);

  it('a foundation model in another region: InvokeModel on that model there only', () => {
    const s = synth({
      stage: 'dev',
      ai: JSON.stringify({ bedrock: { modelId: MODEL, region: 'us-east-1' } }),
    });
    expect(bedrockOf(statementsOf(s, AI_FN))).toEqual([
      {
        Action: 'bedrock:InvokeModel',
        Effect: 'Allow',
        Resource: {
          'Fn::Join': [
            '',
            ['arn:', { Ref: 'AWS::Partition' }, `:bedrock:us-east-1::foundation-model/${MODEL}`],
          ],
        },
      },
    ]);
    expect(environmentOf(s, AI_FN)).toMatchObject({
      HERALD_AI_BEDROCK_REGION: 'us-east-1',
      HERALD_AI_IMAGES: 'false',
    });
  }, 180_000);

  it('an OpenAI-compatible endpoint: its settings, and Decrypt of its key under the key context only', () => {
    const s = synth({
      stage: 'dev',
      ai: {
        openai: { baseUrl: 'https://llm.example.org/v1/', model: 'qwen2.5', keyCiphertext: 'AQIDBA==' },
        timeoutMs: 15000,
      },
    });
    const statements = statementsOf(s, AI_FN);
    expect(bedrockOf(statements)).toEqual([]);
    const decrypt = statements.filter((st) => st.Condition && actions(st).includes('kms:Decrypt'));
    expect(decrypt).toEqual([
      {
        Action: 'kms:Decrypt',
        Effect: 'Allow',
        Resource: { 'Fn::GetAtt': [expect.stringMatching(/^ConnectionSecretsKey/), 'Arn'] },
        Condition: { StringEquals: { 'kms:EncryptionContext:herald': 'ai-openai-key' } },
      },
    ]);
    expect(environmentOf(s, AI_FN)).toMatchObject({
      HERALD_AI_OPENAI_BASE_URL: 'https://llm.example.org/v1',
      HERALD_AI_OPENAI_MODEL: 'qwen2.5',
      HERALD_AI_OPENAI_KEY_CIPHERTEXT: 'AQIDBA==',
      HERALD_AI_TIMEOUT_MS: '15000',
    });
  }, 180_000);

  it('refuses what cannot work, naming the key', () => {
    const config = (ai: unknown) => stageConfigFrom({ stage: 'dev', ai });
    expect(config(undefined).ai).toBeUndefined();
    expect(() => config({})).toThrow(/exactly one/);
    expect(() =>
      config({ bedrock: { modelId: MODEL }, openai: { baseUrl: 'https://x.example/v1', model: 'm' } }),
    ).toThrow(/exactly one/);
    expect(() => config({ bedrock: { modelId: PROFILE } })).toThrow(/inference profile: list the regions/);
    expect(() => config({ bedrock: { modelId: MODEL, regions: ['eu-west-1'] } })).toThrow(
      /only for an inference profile/,
    );
    expect(() =>
      config({ bedrock: { modelId: `arn:aws:bedrock:eu-west-1::foundation-model/${MODEL}` } }),
    ).toThrow(/invalid ai.bedrock.modelId/);
    expect(() => config({ bedrock: { modelId: PROFILE, regions: ['europe'] } })).toThrow(
      /ai.bedrock.regions\[0\]/,
    );
    expect(() => config({ bedrock: { modelId: MODEL, guardrail: { id: 'gr7abc' } } })).toThrow(
      /ai.bedrock.guardrail.version/,
    );
    expect(() => config({ openai: { baseUrl: 'http://llm.example.org/v1', model: 'm' } })).toThrow(
      /ai.openai.baseUrl/,
    );
    expect(() =>
      config({ openai: { baseUrl: 'https://llm.example.org/v1', model: 'm', keyCiphertext: 'sk-live key' } }),
    ).toThrow(/never the key itself/);
    expect(() => config({ bedrock: { modelId: MODEL }, timeoutMs: 60_000 })).toThrow(/ai.timeoutMs/);
    expect(() => config({ bedrock: { modelId: MODEL }, model: 'x' })).toThrow(/unknown key model/);
    expect(
      config({ bedrock: { modelId: PROFILE, regions: ['eu-west-3', 'eu-west-1', 'eu-west-1'] } }).ai?.bedrock
        ?.regions,
    ).toEqual(['eu-west-1', 'eu-west-3']);
  });

  it('on a protected stage comes from cdk.json only', () => {
    const committed = {
      alarmEmail: 'ops@example.com',
      publicUrl: 'https://herald.example.com',
      ai: { bedrock: { modelId: MODEL } },
    };
    const context = { stage: 'prod', stages: { prod: committed } };
    expect(stageConfigFrom(context).ai?.bedrock?.modelId).toBe(MODEL);
    expect(
      stageConfigFrom({ ...context, ai: JSON.stringify({ bedrock: { modelId: MODEL } }) }).ai?.bedrock
        ?.modelId,
    ).toBe(MODEL);
    expect(() =>
      stageConfigFrom({
        ...context,
        ai: JSON.stringify({ bedrock: { modelId: PROFILE, regions: ['eu-west-1'] } }),
      }),
    ).toThrow(/-c ai=.* differs from context.stages.prod.ai/);
  });
});
