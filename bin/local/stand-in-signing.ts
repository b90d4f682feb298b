import { lean } from '#shared/sdk';

// DynamoDB Local reads two things from a request's Authorization header, the access key and the
// region (together they name its database), and verifies no signature; fauxqs reads neither.
// SigV4 — a canonical request, a SHA-256 and an HMAC chain on every call — was ≈ 8 % of the stack's
// busy thread under getPost and the 1,000-post burst (BENCHMARKS.md), all of it spent for servers
// that ignore the result. So the local stack gives the handlers' DynamoDB and SQS clients (the same
// module instances the handlers import) and its own pollers' clients an Authorization header
// with the key and the region and an all-zero signature. Only the signature's computation differs
// from AWS: the key, the region and every other header and byte of the request are the SDK's. In
// AWS nothing calls this, and a request without a real signature would be refused (403), never
// accepted. (The User-Agent middleware stays: Powertools places its own relative to it.)

const ZERO_SIGNATURE = '0'.repeat(64);

type Next = (args: { request: unknown }) => Promise<unknown>;

/** The part of an SDK v3 client this touches. */
interface Signable {
  middlewareStack: {
    remove(name: string): boolean;
    /** `never`: each client types its middleware by its own commands; this one reads only the request. */
    addRelativeTo(
      middleware: never,
      options: { relation: 'after'; toMiddleware: string; name: string; override: boolean },
    ): void;
  };
}

export interface StandInSigning {
  accessKeyId: string;
  region: string;
  /** The signing name: `dynamodb` (DynamoDB and its streams) or `sqs`. */
  service: string;
}

/** The header DynamoDB Local parses, for a request sent at `now`. */
function standInAuthorization(s: StandInSigning, now: Date): { amzDate: string; authorization: string } {
  const amzDate = now.toISOString().replace(/[-:]|\.\d{3}/g, '');
  return {
    amzDate,
    authorization: `AWS4-HMAC-SHA256 Credential=${s.accessKeyId}/${amzDate.slice(0, 8)}/${s.region}/${s.service}/aws4_request, SignedHeaders=host;x-amz-date, Signature=${ZERO_SIGNATURE}`,
  };
}

export function signForStandIns<C extends Signable>(client: C, signing: StandInSigning): C {
  lean(client);
  client.middlewareStack.remove('httpSigningMiddleware');
  // Where the SDK signs: after the retry middleware, so every attempt gets its own date.
  const sign =
    (next: Next): Next =>
    async (args) => {
      const headers = (args.request as { headers?: Record<string, string> }).headers;
      if (headers) {
        const { amzDate, authorization } = standInAuthorization(signing, new Date());
        headers['x-amz-date'] = amzDate;
        headers.authorization = authorization;
      }
      return next(args);
    };
  client.middlewareStack.addRelativeTo(sign as never, {
    relation: 'after',
    toMiddleware: 'retryMiddleware',
    name: 'heraldStandInSigning',
    override: true,
  });
  return client;
}
