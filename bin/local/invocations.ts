import { AsyncLocalStorage } from 'node:async_hooks';
import type { Context } from 'aws-lambda';
import { logger } from '#shared/logger';

// Lambda runs one invocation at a time per container; the local stack runs every function in one
// process, so invocations overlap. Powertools (the logger's Lambda context and appended keys, the
// batch processor's records and failures) keeps per-invocation state in the runtime's invoke store
// when AWS_LAMBDA_MAX_CONCURRENCY is set, as Lambda does when one environment serves concurrent
// invocations. This is that store, on AsyncLocalStorage; the handlers' code is the same as in AWS.

type Values = Record<string | symbol, unknown>;

const REQUEST_ID = Symbol.for('_AWS_LAMBDA_REQUEST_ID');

/** What Powertools and the SDK read of `globalThis.awslambda.InvokeStore`. */
class InvokeStore {
  private readonly als = new AsyncLocalStorage<Values>();
  /** Outside any invocation (a module's init): one record, as sequential invocations share. */
  private readonly outside: Values = {};

  private values(): Values {
    return this.als.getStore() ?? this.outside;
  }
  getContext(): Values | undefined {
    return this.als.getStore();
  }
  hasContext(): boolean {
    return this.als.getStore() !== undefined;
  }
  get<T>(key: string | symbol): T | undefined {
    return this.values()[key] as T | undefined;
  }
  set(key: string | symbol, value: unknown): void {
    this.values()[key] = value;
  }
  run<T>(values: Values, fn: () => T): T {
    return this.als.run(values, fn);
  }
  getRequestId(): string {
    return this.get<string>(REQUEST_ID) ?? '-';
  }
  /** No X-Ray locally. */
  getXRayTraceId(): string | undefined {
    return undefined;
  }
}

const store = new InvokeStore();

/** Makes this process a concurrent Lambda host to Powertools, which reads both on every call. */
function hostConcurrently(): void {
  process.env.AWS_LAMBDA_MAX_CONCURRENCY ??= '1000';
  const global = globalThis as unknown as { awslambda?: { InvokeStore?: unknown } };
  global.awslambda ??= {};
  // The SDK's first request may have put its own (single-invocation) store there: replace it.
  global.awslambda.InvokeStore = store;
}

type Handler<E, R> = (event: E, context: Context) => Promise<R>;

/**
 * The handler as the local stack calls it: each call is one invocation with its own store. Lambda's
 * log group names the function; here one output carries every function, so each invocation's lines
 * name theirs (workers add no Lambda context of their own).
 */
export function asInvocations<E, R>(handler: Handler<E, R>): Handler<E, R> {
  hostConcurrently();
  return (event, context) =>
    store.run({ [REQUEST_ID]: context.awsRequestId }, () => {
      logger.addContext(context);
      return handler(event, context);
    });
}
