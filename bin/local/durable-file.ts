import {
  close as closeFd,
  closeSync,
  fsync,
  fsyncSync,
  open,
  openSync,
  renameSync,
  rmSync,
  writeSync,
} from 'node:fs';
import { dirname } from 'node:path';

// How the local stack writes its state files (stream checkpoints, Step Functions executions, the
// data format, secrets, stack.json, the queue journal's compactions): the new content goes to a
// temporary file that is synced, then renamed over the file, then the directory is synced. A crash
// or a power cut at any point leaves the old content or the new one, never a torn or empty file,
// and once this returns the new content survives a power cut.

/** Replaces `file` with `data`, durably (see above). The temporary file never remains. */
export function writeFileDurably(file: string, data: string | Uint8Array, mode = 0o600): void {
  const tmp = `${file}.tmp`;
  try {
    const fd = openSync(tmp, 'w', mode);
    try {
      writeAllSync(fd, typeof data === 'string' ? Buffer.from(data) : data);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, file);
  } catch (err) {
    rmSync(tmp, { force: true });
    throw err;
  }
  syncDirectory(dirname(file));
}

/** Makes renames and new names in `dir` survive a power cut (a file's own fsync does not). */
export function syncDirectory(dir: string): void {
  // Windows cannot open a directory as a file; NTFS journals renames itself.
  if (process.platform === 'win32') return;
  const fd = openSync(dir, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** syncDirectory off the event loop (the queue journal, whose callers wait on disk anyway). */
export async function syncDirectoryAsync(dir: string): Promise<void> {
  if (process.platform === 'win32') return;
  const fd = await new Promise<number>((ok, fail) => open(dir, 'r', (err, f) => (err ? fail(err) : ok(f))));
  try {
    await new Promise<void>((ok, fail) => fsync(fd, (err) => (err ? fail(err) : ok())));
  } finally {
    await new Promise<void>((ok) => closeFd(fd, () => ok()));
  }
}

function writeAllSync(fd: number, buf: Uint8Array): void {
  for (let at = 0; at < buf.length; ) at += writeSync(fd, buf, at, buf.length - at);
}
