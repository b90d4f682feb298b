// Stands in for a package left out of a Lambda bundle (an esbuild alias, `bundleAliases` in
// lib/operations.ts): its module is never evaluated, and using it fails loudly instead of quietly.

export default function notBundled(): never {
  throw new Error('This package is not part of the Lambda bundle (see bundleAliases in lib/operations.ts).');
}
