import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Duration, type RemovalPolicy, type Size } from 'aws-cdk-lib';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import { PolicyStatement, Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import type { IKey } from 'aws-cdk-lib/aws-kms';
import { Architecture, type ILayerVersion, LoggingFormat, Runtime, Tracing } from 'aws-cdk-lib/aws-lambda';
import { NodejsFunction, OutputFormat } from 'aws-cdk-lib/aws-lambda-nodejs';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { Construct } from 'constructs';
import { DEFAULT_TIMEOUT_SECONDS } from './operations.ts';
import { versionEnvironment } from './version.ts';

/** Repository root: manifest entries and the lock file are relative to it. */
export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

export type TableAccessMode = 'RO' | 'RW';

export interface HeraldFunctionProps {
  /** Handler module relative to the repository root (an `entry` of lib/operations.ts); exports `handler`. */
  readonly entry: string;
  /** Removal policy of the function's log group (per stage). */
  readonly logRemovalPolicy: RemovalPolicy;
  /** @default DEFAULT_TIMEOUT_SECONDS */
  readonly timeout?: Duration;
  readonly description?: string;
  readonly environment?: Record<string, string>;
  /** @default 1024 */
  readonly memorySize?: number;
  /** @default arm64 */
  readonly architecture?: Architecture;
  readonly layers?: ILayerVersion[];
  /** /tmp size. @default 512 MiB */
  readonly ephemeralStorageSize?: Size;
  /** Packages left out of the bundle (they come from a layer or are loaded only outside Lambda). */
  readonly externalModules?: string[];
  /** esbuild aliases: package → module bundled instead, relative to the repository root. */
  readonly bundleAliases?: Record<string, string>;
  /** Shell commands run once the bundle is built, e.g. copying files next to it (the console's assets). */
  readonly afterBundling?: (inputDir: string, outputDir: string) => string[];
  /** X-Ray active tracing (the stage's `tracing`); off: no trace segments and no X-Ray permissions. */
  readonly tracing?: boolean;
}

/**
 * A Lambda function with every Herald default in one place: Node.js 22 on arm64, X-Ray tracing
 * when the stage turns it on, JSON logs into its own log group, and an ESM bundle with source maps that includes the AWS SDK
 * (we pin SDK versions rather than take whatever the runtime ships).
 */
export class HeraldFunction extends NodejsFunction {
  #tableAccess: TableAccessMode | undefined;

  constructor(scope: Construct, id: string, props: HeraldFunctionProps) {
    // An explicit log group, instead of the implicit /aws/lambda/<name> one, so retention and
    // removal are managed by the stack (and no LogRetention custom resource is needed).
    const logGroup = new LogGroup(scope, `${id}Logs`, {
      retention: RetentionDays.ONE_MONTH,
      removalPolicy: props.logRemovalPolicy,
    });
    // Our own role instead of the default one with the AWS managed AWSLambdaBasicExecutionRole
    // (log writes on every log group in the account): this one may log only to its own group.
    const role = new Role(scope, `${id}Role`, {
      assumedBy: new ServicePrincipal('lambda.amazonaws.com'),
      description: `Herald function ${id}`,
    });
    logGroup.grantWrite(role);

    super(scope, id, {
      entry: path.join(REPO_ROOT, props.entry),
      handler: 'handler',
      projectRoot: REPO_ROOT,
      depsLockFilePath: path.join(REPO_ROOT, 'package-lock.json'),
      description: props.description,
      runtime: Runtime.NODEJS_22_X,
      architecture: props.architecture ?? Architecture.ARM_64,
      memorySize: props.memorySize ?? 1024,
      ...(props.layers ? { layers: props.layers } : {}),
      ...(props.ephemeralStorageSize ? { ephemeralStorageSize: props.ephemeralStorageSize } : {}),
      timeout: props.timeout ?? Duration.seconds(DEFAULT_TIMEOUT_SECONDS),
      tracing: props.tracing ? Tracing.ACTIVE : Tracing.DISABLED,
      role,
      logGroup,
      loggingFormat: LoggingFormat.JSON,
      environment: {
        NODE_OPTIONS: '--enable-source-maps',
        POWERTOOLS_SERVICE_NAME: 'herald',
        LOG_LEVEL: 'INFO',
        // The release and commit it runs (its log lines, GET /health, the OpenAPI document say them).
        ...versionEnvironment(),
        ...props.environment,
      },
      bundling: {
        minify: true,
        sourceMap: true,
        sourcesContent: false,
        format: OutputFormat.ESM,
        target: 'node22',
        mainFields: ['module', 'main'],
        // Some dependencies still call require(); give the ESM bundle one.
        banner: "import { createRequire } from 'module'; const require = createRequire(import.meta.url);",
        // Bundle the AWS SDK v3 as well: the versions in package-lock.json are the ones we test.
        externalModules: props.externalModules ?? [],
        ...(props.bundleAliases
          ? {
              esbuildArgs: {
                '--alias': Object.entries(props.bundleAliases).map(([from, to]) => `${from}=${to}`),
              },
            }
          : {}),
        ...(props.afterBundling
          ? {
              commandHooks: {
                beforeBundling: () => [],
                beforeInstall: () => [],
                afterBundling: props.afterBundling,
              },
            }
          : {}),
      },
    });
  }

  /** How this function may touch the table (set by bindTable; undefined: not at all). */
  get tableAccess(): TableAccessMode | undefined {
    return this.#tableAccess;
  }

  /** Whether this function writes the request limiter's counters (every API-key operation does). */
  #countsRequests = false;

  get countsRequests(): boolean {
    return this.#countsRequests;
  }

  /**
   * The request gate and nothing else: UpdateItem on an organization's items (`ORG#…`; the gate is
   * `USAGE#<month>`), touching only api_requests and the keys' burst windows (attributes named by
   * key id, `key_…`). Read-only operations get this instead of general write access.
   */
  grantRequestCounters(table: ITable, key: IKey): void {
    this.#countsRequests = true;
    if (this.#tableAccess === 'RW') return;
    this.addToRolePolicy(
      new PolicyStatement({
        actions: ['dynamodb:UpdateItem'],
        resources: [table.tableArn],
        conditions: {
          'ForAllValues:StringLike': {
            'dynamodb:LeadingKeys': ['ORG#*'],
            'dynamodb:Attributes': ['pk', 'sk', 'api_requests', 'key_*'],
          },
          StringEqualsIfExists: { 'dynamodb:ReturnValues': ['NONE', 'UPDATED_NEW'] },
        },
      }),
    );
    key.grant(this, 'kms:Encrypt', 'kms:GenerateDataKey*');
  }

  /** Least privilege on the single table: RO reads only, RW reads and writes. Sets TABLE_NAME. */
  bindTable(table: ITable, accessMode: TableAccessMode): void {
    this.#tableAccess = accessMode;
    if (accessMode === 'RW') table.grantReadWriteData(this);
    else table.grantReadData(this);
    this.addEnvironment('TABLE_NAME', table.tableName);
  }
}
