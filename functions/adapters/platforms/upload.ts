import type { StreamBody } from './http.ts';
import { type MediaInput, PlatformError } from './types.ts';

// Sending media bytes in bounded memory: a file as one streamed body (raw or multipart/form-data),
// and the time an attempt may spend sending before it leaves the rest to the next attempt.

/** The file itself as a streamed body. */
export function fileBody(item: MediaInput): StreamBody {
  return { length: item.sizeBytes, contentType: item.contentType, open: () => item.stream() };
}

const CRLF = '\r\n';
// As the WHATWG multipart encoder escapes names and filenames.
const quoted = (s: string) => s.replace(/\r/g, '%0D').replace(/\n/g, '%0A').replace(/"/g, '%22');

/**
 * multipart/form-data of text fields and then the file, streamed with its exact length (fetch's own
 * FormData would need the file as a Blob in memory).
 */
export function multipartBody(
  fields: ReadonlyArray<readonly [string, string]>,
  file: { field: string; item: MediaInput },
): StreamBody {
  const boundary = `----herald${crypto.randomUUID().replace(/-/g, '')}`;
  const parts = fields.map(
    ([name, value]) =>
      `--${boundary}${CRLF}Content-Disposition: form-data; name="${quoted(name)}"${CRLF}${CRLF}${value}${CRLF}`,
  );
  const head = Buffer.from(
    `${parts.join('')}--${boundary}${CRLF}Content-Disposition: form-data; name="${quoted(file.field)}"; ` +
      `filename="${quoted(file.item.filename)}"${CRLF}Content-Type: ${file.item.contentType}${CRLF}${CRLF}`,
  );
  const tail = Buffer.from(`${CRLF}--${boundary}--${CRLF}`);
  return {
    length: head.byteLength + file.item.sizeBytes + tail.byteLength,
    contentType: `multipart/form-data; boundary=${boundary}`,
    open: () => {
      const reader = file.item.stream().getReader();
      let stage: 'head' | 'file' | 'done' = 'head';
      return new ReadableStream<Uint8Array>({
        async pull(c) {
          if (stage === 'head') {
            stage = 'file';
            return c.enqueue(head);
          }
          if (stage === 'done') return c.close();
          const { done, value } = await reader.read();
          if (!done) return c.enqueue(value);
          stage = 'done';
          c.enqueue(tail);
        },
        cancel: (reason) => reader.cancel(reason),
      });
    },
  };
}

/**
 * The longest one upload request may take. The worker's Lambda stops at 60 s and takes its batch's
 * other deliveries with it: an upload slower than this fails its own delivery (a retryable timeout)
 * instead. So a platform that takes the file in one request gets at most this long for all of it.
 */
export const UPLOAD_REQUEST_MS = 45_000;

/**
 * How long one attempt sends bytes before it stops between chunks and leaves the rest to the next
 * attempt (resumable uploads only): the worker's Lambda times out at 60 s and the claim's lease
 * runs 90 s, and the attempt still has its post call and outcome write to make.
 */
export const uploadBudget = { ms: 35_000 };

export interface UploadClock {
  /** The budget is spent: start no further chunk. */
  spent(): boolean;
  /** The timeout for the next request: what is left of UPLOAD_REQUEST_MS since the upload began. */
  remainingMs(): number;
}

/** The clock of one attempt's upload. */
export function uploadClock(): UploadClock {
  const started = Date.now();
  return {
    spent: () => Date.now() - started >= uploadBudget.ms,
    remainingMs: () => Math.max(1000, started + UPLOAD_REQUEST_MS - Date.now()),
  };
}

/** The attempt stops between chunks; its checkpoint holds the progress and the next attempt continues. */
export function continueLater(platform: string, sent: number, size: number): PlatformError {
  return new PlatformError(
    'system',
    `${platform}: ${sent} of ${size} bytes uploaded in this attempt's time; the next attempt continues`,
    { retryAfterSeconds: 1 },
  );
}

/** The attempt's time is up on a platform whose uploads cannot resume: the next attempt starts over. */
export function outOfTime(platform: string, sent: number, size: number): PlatformError {
  return new PlatformError(
    'system',
    `${platform}: only ${sent} of ${size} bytes uploaded in one attempt's time (the upload cannot resume); the next attempt starts over`,
  );
}
