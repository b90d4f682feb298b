import { Logger } from '@aws-lambda-powertools/logger';

import { runningVersion } from './version.ts';

// Every line names the release it came from (`version`, `commit`): an upgrade's lines tell apart.
export const logger = new Logger({ serviceName: 'herald', persistentKeys: { ...runningVersion() } });
