import { METRICS_NAMESPACE, PLATFORM_APP_REFUSED } from '#core/metrics';
import { logger } from './logger.ts';

// Lines an operator is paged for. Each is also a CloudWatch metric (Embedded Metric Format: the
// `_aws` member makes CloudWatch Logs extract it), per platform and in total; the stack alarms on
// the total (lib/constructs/alarms.ts).

/**
 * The platform refused Herald's app (its client id or secret, or its configuration) `channels`
 * times (channels' looks and deliveries, counted by adapters/app-refusals.ts): one line per
 * platform, not per channel, so a rotated secret is one page, not thousands.
 */
export function platformAppRefused(platform: string, channels: number, error: string): void {
  logger.error('the platform refused the platform app: the operator must act (herald platform-app set)', {
    platform,
    channels,
    error,
    [PLATFORM_APP_REFUSED]: channels,
    _aws: {
      Timestamp: Date.now(),
      CloudWatchMetrics: [
        {
          Namespace: METRICS_NAMESPACE,
          Dimensions: [['platform'], []],
          Metrics: [{ Name: PLATFORM_APP_REFUSED, Unit: 'Count' }],
        },
      ],
    },
  });
}
