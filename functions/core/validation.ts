import type * as z from 'zod/mini';
import { type FieldError, ValidationError } from './errors.ts';

// zod issues → RFC 9457 field errors with JSON Pointers and stable field codes.

type Issue = z.core.$ZodIssue;

export function pointer(path: readonly PropertyKey[], prefix = ''): string {
  return prefix + path.map((p) => `/${String(p).replaceAll('~', '~0').replaceAll('/', '~1')}`).join('');
}

function describe(issue: Issue): { code: string; message: string } {
  switch (issue.code) {
    case 'invalid_type':
      return issue.input === undefined
        ? { code: 'required', message: 'This field is required.' }
        : { code: 'invalid_type', message: `Expected ${issue.expected}.` };
    case 'too_small':
      return issue.origin === 'array'
        ? { code: 'too_few_items', message: `Needs at least ${issue.minimum} item(s).` }
        : issue.origin === 'string'
          ? { code: 'too_short', message: `Must be at least ${issue.minimum} character(s).` }
          : { code: 'too_small', message: `Must be at least ${issue.minimum}.` };
    case 'too_big':
      return issue.origin === 'array'
        ? { code: 'too_many_items', message: `At most ${issue.maximum} item(s).` }
        : issue.origin === 'string'
          ? { code: 'too_long', message: `Must be at most ${issue.maximum} character(s).` }
          : { code: 'too_big', message: `Must be at most ${issue.maximum}.` };
    case 'invalid_format':
      return {
        code: 'invalid_format',
        message: `Must be a valid ${issue.format === 'datetime' ? 'ISO-8601 date-time with offset' : issue.format}.`,
      };
    case 'invalid_value':
      return {
        code: 'invalid_value',
        message: `Must be one of: ${issue.values.map((v) => JSON.stringify(v)).join(', ')}.`,
      };
    case 'unrecognized_keys':
      return { code: 'unknown_field', message: 'This field is not part of the request.' };
    case 'not_multiple_of':
      return { code: 'invalid_value', message: `Must be a multiple of ${issue.divisor}.` };
    case 'invalid_union':
      return { code: 'invalid_type', message: 'Does not match any allowed shape.' };
    default:
      return {
        code: issue.code === 'custom' ? String(issue.params?.code ?? 'invalid_value') : 'invalid_value',
        message: issue.message,
      };
  }
}

export function issuesToFieldErrors(issues: readonly Issue[], prefix = ''): FieldError[] {
  const out: FieldError[] = [];
  for (const issue of issues) {
    const { code, message } = describe(issue);
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys)
        out.push({ pointer: pointer([...issue.path, key], prefix), code, message });
    } else {
      out.push({ pointer: pointer(issue.path, prefix), code, message });
    }
  }
  return out;
}

/** Parses or throws validation_failed. `prefix` is '' for bodies and '/query' for query strings. */
export function parseOrThrow<T extends z.ZodMiniType>(schema: T, input: unknown, prefix = ''): z.infer<T> {
  // zod 4 leaves `input` off issues unless asked; `describe` needs it to tell required from invalid_type.
  const result = schema.safeParse(input, { reportInput: true });
  if (!result.success) throw new ValidationError(issuesToFieldErrors(result.error.issues, prefix));
  return result.data;
}
