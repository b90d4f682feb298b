import { afterEach, beforeEach, vi } from 'vitest';

// The JSON lines the functions write to stdout and stderr (the Powertools logger's output, as CloudWatch Logs
// receives it), and what CloudWatch requires of an Embedded Metric Format line before it extracts
// its metrics. A file that reads them must run its loggers above SILENT, the unit tests' level:
// `vi.hoisted(() => { process.env.POWERTOOLS_LOG_LEVEL = 'WARN'; })` before its imports.

export type Line = Record<string, unknown>;

/** Collects the JSON lines written to stdout and stderr (WARN and up) during each test; other output passes through. */
export function captureLines(): { all: Line[]; metrics: (name?: string) => Line[] } {
  const all: Line[] = [];
  const streams = [process.stdout, process.stderr];
  const spies: Array<{ mockRestore(): void }> = [];
  beforeEach(() => {
    all.length = 0;
    for (const stream of streams) {
      const write = stream.write.bind(stream);
      const spy = vi.spyOn(stream, 'write');
      spies.push(spy);
      spy.mockImplementation(((chunk: unknown, ...rest: unknown[]) => {
        const lines = String(chunk)
          .split('\n')
          .filter((l) => l.trim());
        const json = lines.flatMap((l) => {
          try {
            const v = JSON.parse(l) as unknown;
            return v && typeof v === 'object' ? [v as Line] : [];
          } catch {
            return [];
          }
        });
        if (json.length > 0 && json.length === lines.length) {
          all.push(...json);
          return true;
        }
        return (write as (...a: unknown[]) => boolean)(chunk, ...rest);
      }) as typeof stream.write);
    }
  });
  afterEach(() => {
    for (const spy of spies.splice(0)) spy.mockRestore();
  });
  return {
    all,
    metrics: (name) => all.filter((l) => '_aws' in l && (name === undefined || typeof l[name] === 'number')),
  };
}

interface Directive {
  Namespace: unknown;
  Dimensions: unknown;
  Metrics: unknown;
}

/**
 * What is wrong with `line` as an EMF line (empty: nothing): a millisecond timestamp; each
 * directive's namespace, dimension sets (at most 30 names, each a top-level string member) and
 * metrics (each a top-level number, unit Count or Seconds); the empty set (the total) in each.
 */
export function emfProblems(line: Line): string[] {
  const problems: string[] = [];
  const aws = line._aws as { Timestamp?: unknown; CloudWatchMetrics?: unknown } | undefined;
  if (!aws) return ['no _aws member'];
  const ts = aws.Timestamp;
  if (typeof ts !== 'number' || !Number.isInteger(ts) || Math.abs(ts - Date.now()) > 60_000)
    problems.push(`Timestamp ${String(ts)} is not now in milliseconds`);
  if (!Array.isArray(aws.CloudWatchMetrics) || aws.CloudWatchMetrics.length === 0)
    return [...problems, 'no CloudWatchMetrics'];
  for (const d of aws.CloudWatchMetrics as Directive[]) {
    if (d.Namespace !== 'Herald') problems.push(`namespace ${String(d.Namespace)}`);
    const sets = d.Dimensions as unknown[][];
    if (!Array.isArray(sets)) problems.push('Dimensions is not a list of sets');
    else {
      if (!sets.some((s) => Array.isArray(s) && s.length === 0)) problems.push('no empty dimension set');
      for (const set of sets) {
        if (set.length > 30) problems.push(`a set of ${set.length} dimensions`);
        for (const name of set)
          if (typeof line[name as string] !== 'string')
            problems.push(`dimension ${String(name)} is no string member`);
      }
    }
    for (const m of d.Metrics as Array<{ Name: string; Unit: string }>) {
      if (typeof line[m.Name] !== 'number') problems.push(`metric ${m.Name} has no number member`);
      if (m.Unit !== 'Count' && m.Unit !== 'Seconds') problems.push(`metric ${m.Name} unit ${m.Unit}`);
    }
  }
  return problems;
}

/** The dimension sets of a line's directives, and the metrics each names with its value. */
export function emfOf(line: Line): {
  dimensions: string[][];
  metrics: Record<string, { unit: string; value: unknown }>;
} {
  const directives = (line._aws as { CloudWatchMetrics: Directive[] }).CloudWatchMetrics;
  return {
    dimensions: directives.flatMap((d) => d.Dimensions as string[][]),
    metrics: Object.fromEntries(
      directives.flatMap((d) =>
        (d.Metrics as Array<{ Name: string; Unit: string }>).map((m) => [
          m.Name,
          { unit: m.Unit, value: line[m.Name] },
        ]),
      ),
    ),
  };
}
