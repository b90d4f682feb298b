import { describe, expect, it } from 'vitest';
import { bedrockInvokeResources } from '#lib/constructs/functions';
import { stageConfigFrom } from '#lib/stage';

// What the generation functions may invoke, per kind of Bedrock model id (the synthesized policy is
// asserted in ai-settings.test.ts; this is every kind without a synth each).

const MODEL = 'anthropic.claude-3-5-haiku-20241022-v1:0';
const arns = (modelId: string, regions: string[] = []) =>
  bedrockInvokeResources({ modelId, regions }, 'eu-west-1').map(
    (r) => `arn:aws:bedrock:${r.region}:${r.inAccount ? '111111111111' : ''}:${r.resource}`,
  );

describe('bedrockInvokeResources', () => {
  it('a foundation model: that model in the region it is called in, only', () => {
    expect(arns(MODEL)).toEqual([`arn:aws:bedrock:eu-west-1::foundation-model/${MODEL}`]);
  });

  it("a geography's profile: the profile, and its model in each destination region", () => {
    expect(arns(`eu.${MODEL}`, ['eu-central-1', 'eu-west-1'])).toEqual([
      `arn:aws:bedrock:eu-west-1:111111111111:inference-profile/eu.${MODEL}`,
      `arn:aws:bedrock:eu-central-1::foundation-model/${MODEL}`,
      `arn:aws:bedrock:eu-west-1::foundation-model/${MODEL}`,
    ]);
  });

  it('a global profile: the profile, its model in the source region, and the region-less model', () => {
    expect(arns(`global.${MODEL}`)).toEqual([
      `arn:aws:bedrock:eu-west-1:111111111111:inference-profile/global.${MODEL}`,
      `arn:aws:bedrock:eu-west-1::foundation-model/${MODEL}`,
      `arn:aws:bedrock:::foundation-model/${MODEL}`,
    ]);
  });
});

describe('the ai.bedrock setting for a global profile', () => {
  const config = (bedrock: unknown) => stageConfigFrom({ stage: 'dev', ai: { bedrock } });
  it('needs no regions, and refuses a list', () => {
    expect(config({ modelId: `global.${MODEL}` }).ai?.bedrock).toMatchObject({ regions: [] });
    expect(() => config({ modelId: `global.${MODEL}`, regions: ['eu-west-1'] })).toThrow(
      /not for a global inference profile/,
    );
  });
});
