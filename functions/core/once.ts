/** A value built on first call; later calls answer the same instance (schemas built on first use). */
export function once<T>(build: () => T): () => T {
  let built: T | undefined;
  return () => {
    built ??= build();
    return built;
  };
}
