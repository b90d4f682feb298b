import type { RemovalPolicy } from 'aws-cdk-lib';
import {
  AttributeType,
  BillingMode,
  type ITable,
  ProjectionType,
  StreamViewType,
  Table,
  TableEncryption,
} from 'aws-cdk-lib/aws-dynamodb';
import { Key } from 'aws-cdk-lib/aws-kms';
import { Secret } from 'aws-cdk-lib/aws-secretsmanager';
import type { Construct } from 'constructs';
import type { StageConfig } from '../stage.ts';
import { TABLE } from '../table-schema.ts';

export interface DataProps {
  readonly config: StageConfig;
  readonly removalPolicy: RemovalPolicy;
}

/**
 * The single table (lib/table-schema.ts) and its stream, under a rotating customer managed key; or,
 * with the stage's `importTable`, a table restored under that key (docs/operator/restore.md), which
 * the stack uses as it is and does not manage.
 */
export class Data {
  readonly tableKey: Key;
  readonly table: ITable;
  /** Whether the table is the stage's importTable rather than one this stack creates. */
  readonly imported: boolean;

  constructor(scope: Construct, { config, removalPolicy }: DataProps) {
    this.tableKey = new Key(scope, 'TableKey', {
      description: `Herald ${config.stage}: encryption of the single table and its stream`,
      enableKeyRotation: true,
      removalPolicy,
    });

    this.imported = config.importTable !== undefined;
    if (config.importTable) {
      // Grants cover the table, its indexes (named: the restore keeps them) and its key; the
      // stream mapping reads the given stream.
      this.table = Table.fromTableAttributes(scope, 'Table', {
        tableName: config.importTable.tableName,
        tableStreamArn: config.importTable.tableStreamArn,
        encryptionKey: this.tableKey,
        globalIndexes: TABLE.indexes.map((index) => index.name),
      });
      return;
    }
    const table = new Table(scope, 'Table', {
      partitionKey: { name: TABLE.partitionKey, type: AttributeType.STRING },
      sortKey: { name: TABLE.sortKey, type: AttributeType.STRING },
      billingMode: BillingMode.PAY_PER_REQUEST,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      timeToLiveAttribute: TABLE.ttlAttribute,
      stream: StreamViewType.NEW_AND_OLD_IMAGES,
      encryption: TableEncryption.CUSTOMER_MANAGED,
      encryptionKey: this.tableKey,
      deletionProtection: config.protectData,
      removalPolicy,
    });
    for (const index of TABLE.indexes) {
      table.addGlobalSecondaryIndex({
        indexName: index.name,
        partitionKey: { name: index.partitionKey, type: AttributeType.STRING },
        sortKey: { name: index.sortKey, type: AttributeType.STRING },
        projectionType: index.projection === 'ALL' ? ProjectionType.ALL : ProjectionType.KEYS_ONLY,
      });
    }
    this.table = table;
  }
}

/** The cursor-signing secret and the two keys that seal secrets stored in the table. */
export class Secrets {
  readonly cursorSecret: Secret;
  readonly webhookSecretsKey: Key;
  readonly connectionSecretsKey: Key;

  constructor(scope: Construct, { config, removalPolicy }: DataProps) {
    // HMAC key that makes list cursors tamper-evident. It encrypts no data and is no credential:
    // every list query is still scoped to the caller's organization by its API key.
    this.cursorSecret = new Secret(scope, 'CursorSecret', {
      description: `Herald ${config.stage}: HMAC key for opaque list cursors`,
      generateSecretString: { passwordLength: 48, excludePunctuation: true },
      removalPolicy,
    });

    // Webhook signing secrets: a key of their own. Only the functions that seal (create, rotate) or
    // open (deliver, test) secrets may use it, and the encryption context binds each ciphertext to
    // its endpoint.
    this.webhookSecretsKey = new Key(scope, 'WebhookSecretsKey', {
      description: `Herald ${config.stage}: encryption of webhook signing secrets`,
      enableKeyRotation: true,
      removalPolicy,
    });

    // Connection secrets: channel tokens, the platform apps' client secrets and in-flight grants,
    // sealed per value (envelope encryption: GenerateDataKey, then AES-GCM) under a context naming
    // whose they are. Only the functions that connect, publish, sync or disconnect may use it.
    this.connectionSecretsKey = new Key(scope, 'ConnectionSecretsKey', {
      description: `Herald ${config.stage}: encryption of channel tokens and platform app secrets`,
      enableKeyRotation: true,
      removalPolicy,
    });
  }
}
