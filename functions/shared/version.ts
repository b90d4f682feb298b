// The release and commit this code was built from, as the stack (lib/herald-function.ts) and the
// local stack set them. Outside both (unit tests, scripts) they are `unknown`.

export interface RunningVersion {
  /** The release, package.json's `version`. */
  readonly version: string;
  /** The git commit of the build. */
  readonly commit: string;
}

export function runningVersion(): RunningVersion {
  return {
    version: process.env.HERALD_VERSION || 'unknown',
    commit: process.env.HERALD_COMMIT || 'unknown',
  };
}
