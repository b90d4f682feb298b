import { App } from 'aws-cdk-lib';
import { addHeraldStacks } from '../lib/herald-stack.ts';
import { applyNag } from '../lib/nag.ts';

// One stage per synthesis: its data stack Herald-<stage> and the stateless Herald-<stage>-<part>
// stacks (`cdk deploy --all` deploys them in dependency order).
const app = new App();
const stacks = addHeraldStacks(app, {
  account: process.env.CDK_DEFAULT_ACCOUNT,
  region: process.env.CDK_DEFAULT_REGION,
});
applyNag(app, stacks);
