import { createHash } from 'node:crypto';

// The media bench's generated file: byte i is (13·i + seed) mod 256, so any range of any size is a
// slice of one 1 MiB block (a multiple of the pattern's period, 256).

export const PATTERN_BYTES = 1024 * 1024;

export function pattern(seed: number): Buffer {
  const b = Buffer.alloc(PATTERN_BYTES);
  for (let i = 0; i < PATTERN_BYTES; i++) b[i] = (13 * i + seed) & 0xff;
  return b;
}

/** SHA-256 (hex) of the whole generated file, computed block by block. */
export function patternSha256(size: number, seed: number): string {
  const block = pattern(seed);
  const h = createHash('sha256');
  for (let at = 0; at < size; at += PATTERN_BYTES)
    h.update(block.subarray(0, Math.min(PATTERN_BYTES, size - at)));
  return h.digest('hex');
}
