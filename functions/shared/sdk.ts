// Every SDK client we build goes through `lean`. The SDK's logger middleware runs on every call
// and, on success, copies the request and the response through their schemas to mask sensitive
// members for the client's logger — the default no-op logger included, whose `info` discards the
// result. We never give the SDK a logger (our own log lines name what they need), so that walk is
// pure cost: a few % of a busy worker's CPU in the profile of a 1,000-post burst (BENCHMARKS.md).

interface WithMiddleware {
  middlewareStack: { remove(toRemove: string): boolean };
}

export function lean<C extends WithMiddleware>(client: C): C {
  client.middlewareStack.remove('loggerMiddleware');
  return client;
}
