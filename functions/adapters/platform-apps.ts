import { GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { keys } from '#adapters/keys';
import { open, type Sealed, seal } from '#adapters/sealed';
import { batchGet, conditionFailureItem, isConditionFailure, TABLE_NAME } from '#adapters/table';
import type { Platform } from '#core/platforms';
import { ddb } from '#shared/clients';

// The operator's OAuth apps, one per platform (`herald platform-app set`), and the apps Herald
// registers on Mastodon instances. Client secrets are sealed (adapters/sealed.ts) under a context
// naming the platform or instance; only the functions that exchange, refresh or revoke open them.

export interface PlatformApp {
  platform: Platform;
  client_id: string;
  client_secret: string;
  /** The redirect URI registered at the platform: `{public URL}/oauth/callback/{platform}`. */
  redirect_uri: string;
  /** Scopes to request instead of the platform's defaults (null: the defaults). */
  scopes: string[] | null;
  /**
   * The platform audited the app (TikTok: until then its Direct Posts can only be private, so
   * Herald sends posts to the creator's inbox by default). Absent: not audited.
   */
  audited?: boolean;
  updated_at: string;
}

/** The platforms whose app has an `audited` setting a connector honours. */
export const AUDIT_PLATFORMS: readonly Platform[] = ['tiktok'];

interface StoredApp extends Omit<PlatformApp, 'client_secret'> {
  secret: Sealed;
}

const appContext = (platform: string) => ({ purpose: 'platform_app', platform });

export async function putPlatformApp(app: PlatformApp): Promise<void> {
  const { client_secret, ...rest } = app;
  const item: StoredApp = { ...rest, secret: await seal(appContext(app.platform), client_secret) };
  await ddb.send(
    new PutCommand({
      TableName: TABLE_NAME,
      Item: { ...keys.platformApp(app.platform), entity: 'platform_app', ...item },
    }),
  );
}

async function opened(item: Record<string, unknown> | null | undefined): Promise<PlatformApp | null> {
  if (!item) return null;
  const {
    secret,
    pk: _pk,
    sk: _sk,
    entity: _e,
    ...rest
  } = item as unknown as StoredApp & Record<string, unknown>;
  return {
    ...(rest as unknown as Omit<PlatformApp, 'client_secret'>),
    client_secret: await open<string>(appContext(String(rest.platform)), secret),
  };
}

export async function getPlatformApp(platform: Platform): Promise<PlatformApp | null> {
  const res = await ddb.send(
    new GetCommand({ TableName: TABLE_NAME, Key: keys.platformApp(platform), ConsistentRead: true }),
  );
  return opened(res.Item);
}

/** A platform's app without its secret (building an authorization URL needs only the client id). */
export async function getPlatformAppInfo(
  platform: Platform,
): Promise<Omit<PlatformApp, 'client_secret'> | null> {
  const [info] = await listPlatformApps([platform]);
  return info ?? null;
}

/**
 * Sets the `audited` setting of a platform's app already registered; false when there is none.
 * Only that attribute changes (the sealed secret is not read or rewritten).
 */
export async function setPlatformAppAudited(
  platform: Platform,
  audited: boolean,
  updatedAt: string,
): Promise<boolean> {
  try {
    await ddb.send(
      new UpdateCommand({
        TableName: TABLE_NAME,
        Key: keys.platformApp(platform),
        UpdateExpression: 'SET audited = :a, updated_at = :u',
        ConditionExpression: 'attribute_exists(pk)',
        ExpressionAttributeValues: { ':a': audited, ':u': updatedAt },
      }),
    );
    return true;
  } catch (err) {
    if (isConditionFailure(err)) return false;
    throw err;
  }
}

/** What a connector honours of the platform's app (PublishContext.app): no secret is opened. */
export async function platformAppSettings(platform: Platform): Promise<{ audited: boolean } | undefined> {
  if (!AUDIT_PLATFORMS.includes(platform)) return undefined;
  const info = await getPlatformAppInfo(platform);
  return { audited: info?.audited === true };
}

/** Which platforms have an app, without opening any secret. */
export async function listPlatformApps(
  platforms: readonly Platform[],
): Promise<Array<Omit<PlatformApp, 'client_secret'> | null>> {
  const items = await batchGet(platforms.map((p) => keys.platformApp(p)));
  return items.map((item) => {
    if (!item) return null;
    const { secret: _s, pk: _pk, sk: _sk, entity: _e, ...rest } = item;
    return rest as unknown as Omit<PlatformApp, 'client_secret'>;
  });
}

/** Herald's app on a Mastodon instance (POST /api/v1/apps answered client id and secret). */
export interface InstanceApp {
  instance: string;
  client_id: string;
  client_secret: string;
  redirect_uri: string;
  scopes: string[];
  created_at: string;
}

const instanceContext = (instance: string) => ({ purpose: 'instance_app', instance });

async function openInstance(item: Record<string, unknown>): Promise<InstanceApp> {
  const { secret, pk: _pk, sk: _sk, entity: _e, ...rest } = item;
  return {
    ...(rest as unknown as Omit<InstanceApp, 'client_secret'>),
    client_secret: await open<string>(instanceContext(String(rest.instance)), secret as Sealed),
  };
}

export async function getInstanceApp(instance: string): Promise<InstanceApp | null> {
  const res = await ddb.send(
    new GetCommand({ TableName: TABLE_NAME, Key: keys.instanceApp(instance), ConsistentRead: true }),
  );
  return res.Item ? openInstance(res.Item) : null;
}

export type InstanceAppInfo = Omit<InstanceApp, 'client_secret'>;

const info = (item: Record<string, unknown>): InstanceAppInfo => {
  const { secret: _s, pk: _pk, sk: _sk, entity: _e, ...rest } = item;
  return rest as unknown as InstanceAppInfo;
};

/** The instance's app without its secret (an authorization URL needs only the client id). */
export async function getInstanceAppInfo(instance: string): Promise<InstanceAppInfo | null> {
  const res = await ddb.send(
    new GetCommand({ TableName: TABLE_NAME, Key: keys.instanceApp(instance), ConsistentRead: true }),
  );
  return res.Item ? info(res.Item) : null;
}

/**
 * Keeps the first app registered on an instance: of two connections that registered at once, the
 * second one's app is dropped and it uses the first (both apps work; only one is remembered).
 * `replaceOther`: an app kept for another redirect URI, or with other scopes than this one, is
 * replaced (the operator moved the deployment's configured public URL, or Herald asks for more
 * scopes than when it registered); otherwise whatever app is kept wins.
 */
export async function keepInstanceApp(app: InstanceApp, replaceOther: boolean): Promise<InstanceAppInfo> {
  const { client_secret, ...rest } = app;
  try {
    await ddb.send(
      new PutCommand({
        TableName: TABLE_NAME,
        Item: {
          ...keys.instanceApp(app.instance),
          entity: 'instance_app',
          ...rest,
          secret: await seal(instanceContext(app.instance), client_secret),
        },
        ...(replaceOther
          ? {
              // …or with other scopes (registered before Herald asked for the ones it asks now).
              ConditionExpression: 'attribute_not_exists(pk) OR redirect_uri <> :uri OR scopes <> :scopes',
              ExpressionAttributeValues: { ':uri': app.redirect_uri, ':scopes': app.scopes },
            }
          : { ConditionExpression: 'attribute_not_exists(pk)' }),
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      }),
    );
    return rest;
  } catch (err) {
    if (!isConditionFailure(err)) throw err;
    const existing = conditionFailureItem(err);
    return existing ? info(existing) : rest;
  }
}
