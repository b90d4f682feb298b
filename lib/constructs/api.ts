import type { RemovalPolicy, Stack } from 'aws-cdk-lib';
import { AccessLogFormat } from 'aws-cdk-lib/aws-apigateway';
import {
  ApiMapping,
  type CfnStage,
  DomainName,
  EndpointType,
  HttpApi,
  HttpMethod,
  HttpRoute,
  HttpRouteKey,
  HttpStage,
  LogGroupLogDestination,
  PayloadFormatVersion,
  SecurityPolicy,
} from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import { Certificate } from 'aws-cdk-lib/aws-certificatemanager';
import { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import { AaaaRecord, ARecord, HostedZone, RecordTarget } from 'aws-cdk-lib/aws-route53';
import { ApiGatewayv2DomainProperties } from 'aws-cdk-lib/aws-route53-targets';
import type { Construct } from 'constructs';
import { copyApiGuideCommands } from '../api-guide.ts';
import { consoleAssetsVersion, copyConsoleAssetsCommands } from '../console-assets.ts';
import { REPO_ROOT } from '../herald-function.ts';
import {
  apiOperations,
  type ConsolePage,
  consolePages,
  fallback,
  mcp,
  type Operation,
  operations,
} from '../operations.ts';
import type { StageConfig } from '../stage.ts';
import type { Data } from './data.ts';
import type { Functions } from './functions.ts';
import type { Queues } from './queues.ts';

/** One JSON object per request, from the $context variables of HTTP APIs. */
const ACCESS_LOG_FORMAT = AccessLogFormat.custom(
  JSON.stringify({
    requestId: '$context.requestId',
    ip: '$context.identity.sourceIp',
    requestTime: '$context.requestTime',
    httpMethod: '$context.httpMethod',
    routeKey: '$context.routeKey',
    path: '$context.path',
    status: '$context.status',
    protocol: '$context.protocol',
    responseLength: '$context.responseLength',
    latency: '$context.responseLatency',
    integrationLatency: '$context.integrationLatency',
    integrationError: '$context.integrationErrorMessage',
    userAgent: '$context.identity.userAgent',
  }),
);

/** The console files' version (a hash of their bytes): read once per synth, shared by every page. */
let assetsVersion: string | undefined;
const consoleAssets = () => (assetsVersion ??= consoleAssetsVersion(REPO_ROOT));

const integration = (id: string, fn: IFunction, opts: { perRoutePermission?: boolean } = {}) =>
  new HttpLambdaIntegration(`${id}Integration`, fn, {
    payloadFormatVersion: PayloadFormatVersion.VERSION_2_0,
    ...(opts.perRoutePermission === false ? { scopePermissionToRoute: false } : {}),
  });

/**
 * The HTTP API resource itself and, with a custom domain, the API Gateway domain name and its DNS
 * records: the data stack's part of the API (the routes, stage and functions live in the stateless
 * stacks). Its id is what the execute-api URL is made of, so it must never be replaced.
 */
export class ApiEndpoint {
  readonly api: HttpApi;
  readonly domain: DomainName | undefined;
  /** The API's origin (no trailing slash): the custom domain's, else the execute-api endpoint. */
  readonly url: string;

  constructor(scope: Construct, { config }: { config: StageConfig }) {
    this.api = new HttpApi(scope, 'Api', {
      description: `Herald ${config.stage}: Social Publishing API`,
      createDefaultStage: false,
      // With a domain, the console answers on that host only: passkeys and OAuth callbacks bind it.
      ...(config.domain ? { disableExecuteApiEndpoint: true } : {}),
    });
    const { domain } = config;
    if (!domain) {
      this.domain = undefined;
      this.url = this.api.apiEndpoint;
      return;
    }
    this.domain = new DomainName(scope, 'ApiDomain', {
      domainName: domain.name,
      certificate: Certificate.fromCertificateArn(scope, 'ApiCertificate', domain.certificateArn),
      endpointType: EndpointType.REGIONAL,
      securityPolicy: SecurityPolicy.TLS_1_2,
    });
    this.url = `https://${domain.name}`;
    if (domain.hostedZoneId) {
      const zone = HostedZone.fromHostedZoneId(scope, 'ApiZone', domain.hostedZoneId);
      const target = RecordTarget.fromAlias(
        new ApiGatewayv2DomainProperties(this.domain.regionalDomainName, this.domain.regionalHostedZoneId),
      );
      // A trailing dot: the name is absolute (an imported zone by id has no name to append).
      new ARecord(scope, 'ApiDomainRecord', { zone, recordName: `${domain.name}.`, target });
      new AaaaRecord(scope, 'ApiDomainRecordV6', { zone, recordName: `${domain.name}.`, target });
    }
  }
}

export interface RoutesProps {
  readonly config: StageConfig;
  readonly data: Data;
  readonly api: HttpApi;
  readonly functions: Functions;
  /** The work queues, for operations that send to one (importMedia). */
  readonly queues?: Queues;
}

/** A manifest operation: its function and its route, in the stack given. */
export function addOperation(
  stack: Stack,
  op: Operation,
  { data, api, functions, queues }: RoutesProps,
): void {
  const fn = functions.make(stack, op.bundlesGuide ? { ...op, afterBundling: copyApiGuideCommands } : op);
  for (const name of op.access.sends ?? []) {
    if (!queues) throw new Error(`${op.id} sends to ${name}: addOperation needs the queues`);
    const { spec, queue } = queues.of(name);
    queue.grantSendMessages(fn);
    fn.addEnvironment(spec.env, queue.queueUrl);
  }
  // Every API-key request is admitted through the limiter's counters (burst + api_requests).
  if (op.scope !== null) fn.grantRequestCounters(data.table, data.tableKey);
  new HttpRoute(stack, `${op.id}Route`, {
    httpApi: api,
    routeKey: HttpRouteKey.with(op.path, HttpMethod[op.method]),
    integration: integration(op.id, fn),
  });
}

/**
 * A console page: its function, one integration shared by the page's routes. The pages link the
 * static files by their version; the assets function carries the files in its bundle.
 */
export function addConsolePage(
  stack: Stack,
  page: ConsolePage,
  { config, api, functions }: RoutesProps,
): void {
  const fn = functions.make(stack, {
    ...page,
    ...(page.bundlesAssets ? { afterBundling: copyConsoleAssetsCommands } : {}),
  });
  fn.addEnvironment('HERALD_CONSOLE_ASSETS_VERSION', consoleAssets());
  // The passkeys' relying party and every POST's expected origin; else each request's own host.
  if (config.publicUrl) fn.addEnvironment('HERALD_CONSOLE_URL', config.publicUrl);
  // One invoke permission for the API rather than one per route: the page's routes are the only
  // ones bound to it, and the stack stays further from CloudFormation's 500 resources.
  const pageIntegration = integration(page.id, fn, { perRoutePermission: false });
  for (const route of page.routes)
    new HttpRoute(stack, `${page.id}${route.method}${route.path}Route`, {
      httpApi: api,
      routeKey: HttpRouteKey.with(route.path, HttpMethod[route.method]),
      integration: pageIntegration,
    });
}

/**
 * The gateway: the `$default` stage (access logs, throttles, the custom domain's mapping), the MCP
 * server on every method of its path and the $default fallback (404/405 as problem+json). It must
 * deploy after every stack with routes: the stage's route settings name their route keys.
 */
export class Gateway {
  readonly stage: HttpStage;

  constructor(
    stack: Stack,
    props: RoutesProps & { removalPolicy: RemovalPolicy; domain: DomainName | undefined },
  ) {
    const { config, removalPolicy, api, functions, domain } = props;
    const accessLogs = new LogGroup(stack, 'ApiAccessLogs', {
      retention: RetentionDays.ONE_MONTH,
      removalPolicy,
    });
    // The default stage is declared explicitly: HttpApi's implicit one takes no logging or throttling.
    // Its URL depends only on the API's id, so it may live outside the data stack.
    this.stage = new HttpStage(stack, 'ApiDefaultStage', {
      httpApi: api,
      stageName: '$default',
      autoDeploy: true,
      // The stage's throttle (lib/stage.ts: 100 requests per second, bursts of 200 unless set).
      throttle: { rateLimit: config.throttle.rateLimit, burstLimit: config.throttle.burstLimit },
      accessLogSettings: {
        destination: new LogGroupLogDestination(accessLogs),
        format: ACCESS_LOG_FORMAT,
      },
    });
    if (domain) new ApiMapping(stack, 'ApiMapping', { api, domainName: domain, stage: this.stage });

    // Per-route throttles (the manifest's `throttle`, the API's and the console's), under the
    // stage's. RouteSettings is raw JSON in CloudFormation's own casing.
    const throttled = [...operations, ...consolePages.flatMap((page) => page.routes)].filter(
      (r) => r.throttle,
    );
    if (throttled.length)
      (this.stage.node.defaultChild as CfnStage).routeSettings = Object.fromEntries(
        throttled.map((r) => [
          `${r.method} ${r.path}`,
          {
            ThrottlingRateLimit: r.throttle?.rateLimit,
            ThrottlingBurstLimit: r.throttle?.burstLimit,
          },
        ]),
      );

    // The MCP server: every method of /api/mcp; it invokes the operations' functions, one per tool.
    const mcpFunction = functions.make(stack, mcp);
    const operationFunctions = apiOperations.map((op) => [op.id, functions.get(op.id)] as const);
    // Exactly these functions, unqualified (no version/alias wildcard): the tools invoke $LATEST by name.
    mcpFunction.addToRolePolicy(
      new PolicyStatement({
        actions: ['lambda:InvokeFunction'],
        resources: operationFunctions.map(([, fn]) => fn.functionArn),
      }),
    );
    if (config.mcpAllowedOrigins.length)
      mcpFunction.addEnvironment('HERALD_MCP_ALLOWED_ORIGINS', config.mcpAllowedOrigins.join(','));
    mcpFunction.addEnvironment(
      'HERALD_OPERATION_FUNCTIONS',
      stack.toJsonString(Object.fromEntries(operationFunctions.map(([id, fn]) => [id, fn.functionName]))),
    );
    new HttpRoute(stack, 'McpRoute', {
      httpApi: api,
      routeKey: HttpRouteKey.with(mcp.path, HttpMethod.ANY),
      integration: integration(mcp.id, mcpFunction),
    });

    // Everything no operation matches ($default route): 404, or 405 with Allow, as problem+json.
    // Its console 404 links the same versioned files and reads the same session cookie as the pages.
    const fallbackFunction = functions.make(stack, fallback);
    fallbackFunction.addEnvironment('HERALD_CONSOLE_ASSETS_VERSION', consoleAssets());
    if (config.publicUrl) fallbackFunction.addEnvironment('HERALD_CONSOLE_URL', config.publicUrl);
    new HttpRoute(stack, 'DefaultRoute', {
      httpApi: api,
      routeKey: HttpRouteKey.DEFAULT,
      integration: integration(fallback.id, fallbackFunction),
    });
  }
}
