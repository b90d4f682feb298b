import { App } from 'aws-cdk-lib';
import { addHeraldStack } from '../lib/herald-stack.ts';
import { applyNag } from '../lib/nag.ts';

const app = new App();
const stack = addHeraldStack(app, {
  account: process.env.CDK_DEFAULT_ACCOUNT,
  region: process.env.CDK_DEFAULT_REGION,
});
applyNag(app, stack);
