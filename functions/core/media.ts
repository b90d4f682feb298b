import type { MediaKind } from './platforms.ts';

// Media assets as createPost sees them (the upload flow owns the rest).

export interface MediaAssetRecord {
  id: string;
  org_id: string;
  status: 'pending' | 'ready';
  kind: MediaKind;
  url: string;
}

const ASSET_IN_URL = /\/media\/(med_[0-9A-HJKMNP-TV-Z]{26})(?:[/?#]|$)/;

/** The asset id a media url points at, or null when it is not one of ours. */
export function mediaIdFromUrl(url: string): string | null {
  return ASSET_IN_URL.exec(url)?.[1] ?? null;
}
