// The metrics Herald writes itself (CloudWatch Embedded Metric Format, see shared/alarms.ts) and
// the stack alarms on (lib/constructs/alarms.ts): named once here for both.

export const METRICS_NAMESPACE = 'Herald';
/** Channels whose platform refused Herald's app (a client id or secret): the operator must act. */
export const PLATFORM_APP_REFUSED = 'PlatformAppRefused';
