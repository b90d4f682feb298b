// The `node:dns` the fuzz suites run with (vi.mock factory): every name resolves to 10.0.0.1, so
// nothing reaches the network and any webhook host name is refused by the address policy.

export async function privateDns(importOriginal: <T>() => Promise<T>) {
  const actual = await importOriginal<typeof import('node:dns')>();
  const lookup = async () => [{ address: '10.0.0.1', family: 4 }];
  const promises = { ...actual.promises, lookup };
  return { ...actual, default: { ...actual, promises }, promises };
}
