import { App } from 'aws-cdk-lib';
import { addHeraldStacks } from '../lib/herald-stack.ts';
import { applyNag } from '../lib/nag.ts';

// One stage per synthesis: its data stack Herald-<stage> and the stateless Herald-<stage>-<part>
// stacks (`cdk deploy --all` deploys them in dependency order).
// Cross-stack references as CloudFormation exports and imports (the default, stated): an export in
// use cannot change, which protects the data stack's values (docs/architecture/stacks.md).
const app = new App({ context: { '@aws-cdk/core:defaultCrossStackReferences': 'strong' } });
const stacks = addHeraldStacks(app, {
  account: process.env.CDK_DEFAULT_ACCOUNT,
  region: process.env.CDK_DEFAULT_REGION,
});
applyNag(app, stacks);
