import { type RemovalPolicy, Stack } from 'aws-cdk-lib';
import { AccessLogFormat } from 'aws-cdk-lib/aws-apigateway';
import {
  type CfnStage,
  HttpApi,
  HttpMethod,
  HttpRoute,
  HttpRouteKey,
  HttpStage,
  LogGroupLogDestination,
  PayloadFormatVersion,
} from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { Construct } from 'constructs';
import { copyApiGuideCommands } from '../api-guide.ts';
import { consoleAssetsVersion, copyConsoleAssetsCommands } from '../console-assets.ts';
import { REPO_ROOT } from '../herald-function.ts';
import { apiOperations, consolePages, fallback, mcp, operations } from '../operations.ts';
import type { StageConfig } from '../stage.ts';
import type { Data } from './data.ts';
import type { Functions } from './functions.ts';

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

export interface ApiProps {
  readonly config: StageConfig;
  readonly removalPolicy: RemovalPolicy;
  readonly data: Data;
  readonly functions: Functions;
}

const integration = (id: string, fn: IFunction, opts: { perRoutePermission?: boolean } = {}) =>
  new HttpLambdaIntegration(`${id}Integration`, fn, {
    payloadFormatVersion: PayloadFormatVersion.VERSION_2_0,
    ...(opts.perRoutePermission === false ? { scopePermissionToRoute: false } : {}),
  });

/**
 * The HTTP API: one route and one function per manifest operation, one function per console page
 * with a route per (method, path) it serves, the MCP server on every method of its path, and the
 * $default fallback (404/405 as problem+json) for everything else.
 */
export class Api {
  readonly api: HttpApi;
  readonly stage: HttpStage;

  constructor(scope: Construct, { config, removalPolicy, data, functions }: ApiProps) {
    const accessLogs = new LogGroup(scope, 'ApiAccessLogs', {
      retention: RetentionDays.ONE_MONTH,
      removalPolicy,
    });
    this.api = new HttpApi(scope, 'Api', {
      description: `Herald ${config.stage}: Social Publishing API`,
      createDefaultStage: false,
    });
    // The default stage is declared explicitly: HttpApi's implicit one takes no logging or throttling.
    this.stage = new HttpStage(scope, 'ApiDefaultStage', {
      httpApi: this.api,
      stageName: '$default',
      autoDeploy: true,
      throttle: { burstLimit: 200, rateLimit: 100 },
      accessLogSettings: {
        destination: new LogGroupLogDestination(accessLogs),
        format: ACCESS_LOG_FORMAT,
      },
    });

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

    for (const op of operations) {
      const fn = functions.make(op.bundlesGuide ? { ...op, afterBundling: copyApiGuideCommands } : op);
      // Every API-key request is admitted through the limiter's counters (burst + api_requests).
      if (op.scope !== null) fn.grantRequestCounters(data.table, data.tableKey);
      this.api.addRoutes({
        path: op.path,
        methods: [HttpMethod[op.method]],
        integration: integration(op.id, fn),
      });
    }

    // The console: a function per page, one integration shared by the page's routes. The pages link
    // the static files by their version; the assets function carries the files in its bundle.
    const assetsVersion = consoleAssetsVersion(REPO_ROOT);
    for (const page of consolePages) {
      const fn = functions.make({
        ...page,
        ...(page.bundlesAssets ? { afterBundling: copyConsoleAssetsCommands } : {}),
      });
      fn.addEnvironment('HERALD_CONSOLE_ASSETS_VERSION', assetsVersion);
      // The passkeys' relying party and every POST's expected origin; else each request's own host.
      if (config.publicUrl) fn.addEnvironment('HERALD_CONSOLE_URL', config.publicUrl);
      // One invoke permission for the API rather than one per route: the page's routes are the only
      // ones bound to it, and the stack stays further from CloudFormation's 500 resources.
      const pageIntegration = integration(page.id, fn, { perRoutePermission: false });
      for (const route of page.routes)
        this.api.addRoutes({
          path: route.path,
          methods: [HttpMethod[route.method]],
          integration: pageIntegration,
        });
    }

    // The MCP server: every method of /api/mcp; it invokes the operations' functions, one per tool.
    const mcpFunction = functions.make(mcp);
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
      Stack.of(scope).toJsonString(
        Object.fromEntries(operationFunctions.map(([id, fn]) => [id, fn.functionName])),
      ),
    );
    this.api.addRoutes({
      path: mcp.path,
      methods: [HttpMethod.ANY],
      integration: integration(mcp.id, mcpFunction),
    });

    // Everything no operation matches ($default route): 404, or 405 with Allow, as problem+json.
    // Its console 404 links the same versioned files and reads the same session cookie as the pages.
    const fallbackFunction = functions.make(fallback);
    fallbackFunction.addEnvironment('HERALD_CONSOLE_ASSETS_VERSION', assetsVersion);
    if (config.publicUrl) fallbackFunction.addEnvironment('HERALD_CONSOLE_URL', config.publicUrl);
    new HttpRoute(this.api, 'DefaultRoute', {
      httpApi: this.api,
      routeKey: HttpRouteKey.DEFAULT,
      integration: integration(fallback.id, fallbackFunction),
    });
  }
}
