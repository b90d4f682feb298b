import { Duration } from 'aws-cdk-lib';
import type { IHttpApi } from 'aws-cdk-lib/aws-apigatewayv2';
import {
  Alarm,
  AlarmStatusWidget,
  Dashboard as CwDashboard,
  GraphWidget,
  type IMetric,
  MathExpression,
  Metric,
  Stats,
  TextWidget,
} from 'aws-cdk-lib/aws-cloudwatch';
import type { Construct } from 'constructs';
import {
  CHANNEL_STATUS_CHANGED,
  DELIVERY_FAILED,
  DELIVERY_PUBLISHED,
  DELIVERY_RETRIED,
  METRIC_DIMENSIONS,
  METRICS_NAMESPACE,
  PUBLISH_LATENESS,
  WEBHOOK_DELIVERY,
  WEBHOOK_OUTCOMES,
} from '../../functions/core/metrics.ts';
import type { HeraldFunction } from '../herald-function.ts';
import type { StageConfig } from '../stage.ts';
import type { Alarms } from './alarms.ts';
import type { Queues } from './queues.ts';

const PERIOD = Duration.minutes(5);
/** CloudWatch shows at most 100 alarms in one alarm status widget. */
const ALARMS_PER_WIDGET = 100;
const WIDTH = 12;

export interface DashboardProps {
  readonly config: StageConfig;
  readonly api: IHttpApi;
  readonly queues: Queues;
  readonly streamRelay: HeraldFunction;
  /** Made last: every alarm it has made is shown. */
  readonly alarms: Alarms;
}

/** `Herald-<stage>`: the CloudWatch dashboard's name. */
export const dashboardName = (stage: string): string => `Herald-${stage}`;

/**
 * One CloudWatch dashboard per stage (docs/operator/alarms.md reads it): the API, the queues and
 * DLQs, the stream relay, per-platform publishing and lateness, webhooks, channel health, and the
 * state of every alarm. The per-platform graphs are SEARCH expressions, so a new platform shows
 * without a change here.
 */
export class Dashboard {
  readonly dashboard: CwDashboard;

  constructor(scope: Construct, { config, api, queues, streamRelay, alarms }: DashboardProps) {
    const dashboard = new CwDashboard(scope, 'Dashboard', {
      dashboardName: dashboardName(config.stage),
      defaultInterval: Duration.hours(3),
    });
    this.dashboard = dashboard;

    const graph = (title: string, left: IMetric[], right: IMetric[] = []) =>
      new GraphWidget({ title, left, right, width: WIDTH, height: 6 });
    const herald = (metricName: string, statistic: string = Stats.SUM, label?: string) =>
      new Metric({
        namespace: METRICS_NAMESPACE,
        metricName,
        period: PERIOD,
        statistic,
        ...(label ? { label } : {}),
      });
    const search = (schema: string, metricName: string, statistic: string, label: string) =>
      new MathExpression({
        expression: `SEARCH('{${METRICS_NAMESPACE},${schema}} MetricName="${metricName}"', '${statistic}', ${PERIOD.toSeconds()})`,
        usingMetrics: {},
        label,
        period: PERIOD,
      });

    const alarmNames = alarms.names;
    const widgets = [];
    for (let i = 0; i < alarmNames.length; i += ALARMS_PER_WIDGET) {
      const chunk = alarmNames.slice(i, i + ALARMS_PER_WIDGET);
      widgets.push(
        new AlarmStatusWidget({
          title: `Alarms${alarmNames.length > ALARMS_PER_WIDGET ? ` (${i / ALARMS_PER_WIDGET + 1})` : ''}`,
          // By ARN from the name: no reference to (and export from) every other stack.
          alarms: chunk.map((name) =>
            Alarm.fromAlarmArn(scope, `DashboardAlarm${name}`, alarms.arnOf(scope, name)),
          ),
          width: 24,
          height: 6,
        }),
      );
    }
    dashboard.addWidgets(
      new TextWidget({
        markdown: `# Herald ${config.stage}\nEach alarm's section: docs/operator/alarms.md (${alarms.docsBase}/operator/alarms).`,
        width: 24,
        height: 2,
      }),
    );
    dashboard.addWidgets(...widgets);

    dashboard.addWidgets(
      graph(
        'API requests and errors',
        [api.metricCount({ period: PERIOD, statistic: Stats.SUM, label: 'requests' })],
        [
          api.metricClientError({ period: PERIOD, statistic: Stats.SUM, label: '4xx' }),
          api.metricServerError({ period: PERIOD, statistic: Stats.SUM, label: '5xx' }),
        ],
      ),
      graph('API latency (ms)', [
        api.metricLatency({ period: PERIOD, statistic: Stats.p(50), label: 'p50' }),
        api.metricLatency({ period: PERIOD, statistic: Stats.p(99), label: 'p99' }),
      ]),
    );

    const pairs = [...queues.pairs.entries()];
    dashboard.addWidgets(
      graph(
        'Queue depth (messages visible)',
        pairs.map(([name, { queue }]) =>
          queue.metricApproximateNumberOfMessagesVisible({
            period: PERIOD,
            statistic: Stats.MAXIMUM,
            label: name,
          }),
        ),
      ),
      graph(
        'Queue oldest message (s)',
        pairs.map(([name, { queue }]) =>
          queue.metricApproximateAgeOfOldestMessage({
            period: PERIOD,
            statistic: Stats.MAXIMUM,
            label: name,
          }),
        ),
      ),
    );
    dashboard.addWidgets(
      graph('DLQ depth (messages visible)', [
        ...pairs.map(([name, { dlq }]) =>
          dlq.metricApproximateNumberOfMessagesVisible({
            period: PERIOD,
            statistic: Stats.MAXIMUM,
            label: name,
          }),
        ),
        queues.streamRelayDlq.metricApproximateNumberOfMessagesVisible({
          period: PERIOD,
          statistic: Stats.MAXIMUM,
          label: 'stream',
        }),
      ]),
      graph(
        'Stream relay: iterator age (ms) and errors',
        [
          streamRelay.metric('IteratorAge', {
            period: PERIOD,
            statistic: Stats.MAXIMUM,
            label: 'iterator age',
          }),
        ],
        [streamRelay.metricErrors({ period: PERIOD, statistic: Stats.SUM, label: 'errors' })],
      ),
    );

    const { platform, category, outcome, status } = METRIC_DIMENSIONS;
    dashboard.addWidgets(
      graph('Deliveries published, by platform', [search(platform, DELIVERY_PUBLISHED, 'Sum', '')]),
      graph('Deliveries failed, by platform and category', [
        search(`${platform},${category}`, DELIVERY_FAILED, 'Sum', ''),
      ]),
    );
    dashboard.addWidgets(
      graph(
        'Publish lateness (s): all platforms',
        [herald(PUBLISH_LATENESS, Stats.p(50), 'p50'), herald(PUBLISH_LATENESS, Stats.p(99), 'p99')],
        [herald(DELIVERY_RETRIED, Stats.SUM, 'retried')],
      ),
      graph('Publish lateness p99 (s), by platform', [search(platform, PUBLISH_LATENESS, 'p99', '')]),
    );
    dashboard.addWidgets(
      graph(
        'Webhook deliveries, by outcome',
        WEBHOOK_OUTCOMES.map(
          (o) =>
            new Metric({
              namespace: METRICS_NAMESPACE,
              metricName: WEBHOOK_DELIVERY,
              dimensionsMap: { [outcome]: o },
              period: PERIOD,
              statistic: Stats.SUM,
              label: o,
            }),
        ),
      ),
      graph('Channel status changes, by platform and status', [
        search(`${platform},${status}`, CHANNEL_STATUS_CHANGED, 'Sum', ''),
      ]),
    );
  }
}
