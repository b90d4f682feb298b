import {
  bearer,
  type FakeContext,
  type FakePlatform,
  type FakeRequest,
  type FakeResponse,
} from './server.ts';

// Contract fake of a Mastodon instance: POST /api/v2/media (multipart `file`, `description`; 200 for
// images, 202 with url null for video/audio until processed), GET /api/v1/media/:id (206 while
// processing), POST /api/v1/statuses with Idempotency-Key (a repeat returns the original status),
// GET /api/v1/statuses/:id, GET /api/v1/accounts/verify_credentials and
// /api/v1/accounts/:id/statuses (newest first, limit/max_id). Statuses carry HTML `content` the way
// Mastodon renders it. Errors are `{"error": "…"}`: 401 "The access token is invalid", 422
// "Validation failed: …", 404 "Record not found".

export interface FakeMastodonMedia {
  id: string;
  type: 'image' | 'gifv' | 'video' | 'audio';
  mimeType: string;
  filename: string;
  bytes: Buffer;
  description: string | null;
  pendingPolls: number;
  ready: boolean;
}

export interface FakeMastodonStatus {
  id: string;
  text: string;
  visibility: string;
  spoiler_text: string;
  sensitive: boolean;
  language: string | null;
  created_at: string;
  idempotencyKey: string | null;
  media: FakeMastodonMedia[];
  favourites_count: number;
  reblogs_count: number;
  replies_count: number;
}

export interface FakeMastodon extends FakePlatform {
  validTokens: Set<string>;
  media: Map<string, FakeMastodonMedia>;
  posts: FakeMastodonStatus[];
  /** How many GET /api/v1/media/:id answer 206 before an async attachment is ready. */
  processingPolls: number;
  /** Forget idempotency keys (as the instance does after an hour). */
  forgetIdempotencyKeys(): void;
  account: { id: string; username: string; acct: string };
}

const err = (status: number, error: string): FakeResponse => ({ status, body: { error } });
const MAX_CHARS = 500;
const URL_RE = /https?:\/\/[^\s<>"]+/gu;

function escapeHtml(s: string) {
  return s
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');
}

/** Mastodon's rendering of plain text: paragraphs, <br />, linkified URLs with hidden scheme spans. */
function render(text: string): string {
  const paragraphs = text.split(/\n{2,}/);
  return paragraphs
    .map((p) => {
      let html = '';
      let last = 0;
      for (const m of p.matchAll(URL_RE)) {
        const url = m[0];
        const i = m.index ?? 0;
        html += escapeHtml(p.slice(last, i));
        const [, scheme = '', rest = ''] = /^(https?:\/\/)(.*)$/.exec(url) ?? [];
        const shown = rest.slice(0, 30);
        html += `<a href="${escapeHtml(url)}" target="_blank" rel="nofollow noopener" translate="no"><span class="invisible">${scheme}</span><span class="${rest.length > 30 ? 'ellipsis' : ''}">${escapeHtml(shown)}</span><span class="invisible">${escapeHtml(rest.slice(30))}</span></a>`;
        last = i + url.length;
      }
      html += escapeHtml(p.slice(last));
      return `<p>${html.replace(/\n/g, '<br />')}</p>`;
    })
    .join('');
}

function charCount(text: string) {
  return [...text.replace(URL_RE, 'x'.repeat(23))].length;
}

export function createFake(): FakeMastodon {
  let seq = 0;
  const nextId = () => String(113000000000000000n + BigInt(++seq));
  const keys = new Map<string, string>();

  const fake: FakeMastodon = {
    name: 'mastodon',
    validTokens: new Set(['token']),
    media: new Map(),
    posts: [],
    processingPolls: 0,
    account: { id: '109000000000000001', username: 'acme', acct: 'acme' },
    forgetIdempotencyKeys() {
      keys.clear();
    },
    reset() {
      seq = 0;
      keys.clear();
      fake.validTokens = new Set(['token']);
      fake.media = new Map();
      fake.posts = [];
      fake.processingPolls = 0;
    },

    async handle(req: FakeRequest, ctx: FakeContext): Promise<FakeResponse | null> {
      const token = bearer(req);
      if (!token || !fake.validTokens.has(token)) return err(401, 'The access token is invalid');
      const base = ctx.base;
      const attachmentJson = (m: FakeMastodonMedia) => ({
        id: m.id,
        type: m.type,
        url: m.ready ? `${base}/system/media_attachments/files/${m.id}/original/${m.filename}` : null,
        preview_url: `${base}/system/media_attachments/files/${m.id}/small/${m.filename}`,
        remote_url: null,
        text_url: null,
        meta: {},
        description: m.description,
        blurhash: 'UFBWY:8_0Jxv?bIUt7xt',
      });
      const account = { ...fake.account, display_name: 'Acme', url: `${base}/@${fake.account.username}` };
      const statusJson = (s: FakeMastodonStatus) => ({
        id: s.id,
        created_at: s.created_at,
        in_reply_to_id: null,
        in_reply_to_account_id: null,
        sensitive: s.sensitive,
        spoiler_text: s.spoiler_text,
        visibility: s.visibility,
        language: s.language,
        uri: `${base}/users/${fake.account.username}/statuses/${s.id}`,
        url: `${base}/@${fake.account.username}/${s.id}`,
        replies_count: s.replies_count,
        reblogs_count: s.reblogs_count,
        favourites_count: s.favourites_count,
        content: render(s.text),
        account,
        media_attachments: s.media.map(attachmentJson),
        mentions: [],
        tags: [],
        emojis: [],
      });

      if (req.method === 'POST' && req.path === '/api/v2/media') {
        let form: FormData;
        try {
          form = await new Response(req.body, {
            headers: { 'content-type': req.headers['content-type'] ?? '' },
          }).formData();
        } catch {
          return err(422, "Validation failed: File can't be blank");
        }
        const file = form.get('file');
        if (!file || typeof file === 'string') return err(422, "Validation failed: File can't be blank");
        const mimeType = file.type;
        const kind = mimeType.split('/')[0];
        if (!['image', 'video', 'audio'].includes(kind ?? ''))
          return err(422, 'Validation failed: File content type is invalid, File is invalid');
        const description = form.get('description');
        if (typeof description === 'string' && description.length > 1500) {
          return err(422, 'Validation failed: Description is too long (maximum is 1500 characters)');
        }
        const m: FakeMastodonMedia = {
          id: nextId(),
          type:
            kind === 'image' ? (mimeType === 'image/gif' ? 'gifv' : 'image') : (kind as 'video' | 'audio'),
          mimeType,
          filename: file.name,
          bytes: Buffer.from(await file.arrayBuffer()),
          description: typeof description === 'string' ? description : null,
          pendingPolls: fake.processingPolls,
          ready: kind === 'image' && mimeType !== 'image/gif',
        };
        fake.media.set(m.id, m);
        return { status: m.ready ? 200 : 202, body: attachmentJson(m) };
      }

      const mediaGet = /^\/api\/v1\/media\/([^/]+)$/.exec(req.path);
      if (req.method === 'GET' && mediaGet) {
        const m = fake.media.get(decodeURIComponent(mediaGet[1] ?? ''));
        if (!m) return err(404, 'Record not found');
        if (!m.ready && m.pendingPolls > 0) {
          m.pendingPolls--;
          return { status: 206, body: attachmentJson(m) };
        }
        m.ready = true;
        return { status: 200, body: attachmentJson(m) };
      }

      if (req.method === 'POST' && req.path === '/api/v1/statuses') {
        const key = req.headers['idempotency-key'] ?? null;
        if (key && keys.has(key)) {
          const existing = fake.posts.find((s) => s.id === keys.get(key));
          if (existing) return { status: 200, body: statusJson(existing) };
        }
        const p = (req.json ?? {}) as Record<string, unknown>;
        const text = typeof p.status === 'string' ? p.status : '';
        const mediaIds = Array.isArray(p.media_ids) ? p.media_ids.map(String) : [];
        if (!text.trim() && mediaIds.length === 0) return err(422, "Validation failed: Text can't be blank");
        const spoiler = typeof p.spoiler_text === 'string' ? p.spoiler_text : '';
        if (charCount(text) + [...spoiler].length > MAX_CHARS)
          return err(422, `Validation failed: Text character limit of ${MAX_CHARS} exceeded`);
        if (mediaIds.length > 4) return err(422, 'Validation failed: Cannot attach more than 4 files');
        const visibility = p.visibility === undefined ? 'public' : String(p.visibility);
        if (!['public', 'unlisted', 'private', 'direct'].includes(visibility))
          return err(422, 'Validation failed: Visibility is not included in the list');
        const attached: FakeMastodonMedia[] = [];
        for (const id of mediaIds) {
          const m = fake.media.get(id);
          if (!m) return err(422, 'Validation failed: Media ids are invalid');
          if (!m.ready)
            return err(422, 'Cannot attach files that have not finished processing. Try again in a moment!');
          attached.push(m);
        }
        const s: FakeMastodonStatus = {
          id: nextId(),
          text,
          visibility,
          spoiler_text: spoiler,
          sensitive: p.sensitive === true,
          language: typeof p.language === 'string' ? p.language : null,
          created_at: new Date().toISOString(),
          idempotencyKey: key,
          media: attached,
          favourites_count: 0,
          reblogs_count: 0,
          replies_count: 0,
        };
        fake.posts.push(s);
        if (key) keys.set(key, s.id);
        return { status: 200, body: statusJson(s) };
      }

      const statusGet = /^\/api\/v1\/statuses\/([^/]+)$/.exec(req.path);
      if (req.method === 'GET' && statusGet) {
        const s = fake.posts.find((x) => x.id === decodeURIComponent(statusGet[1] ?? ''));
        return s ? { status: 200, body: statusJson(s) } : err(404, 'Record not found');
      }

      if (req.method === 'GET' && req.path === '/api/v1/accounts/verify_credentials') {
        return {
          status: 200,
          body: { ...account, source: { privacy: 'public', sensitive: false, language: null, note: '' } },
        };
      }

      const accountStatuses = /^\/api\/v1\/accounts\/([^/]+)\/statuses$/.exec(req.path);
      if (req.method === 'GET' && accountStatuses) {
        if (decodeURIComponent(accountStatuses[1] ?? '') !== fake.account.id)
          return err(404, 'Record not found');
        const limit = Math.min(40, Number(req.query.get('limit') ?? 20));
        const maxId = req.query.get('max_id');
        const list = [...fake.posts]
          .sort((a, b) => (BigInt(b.id) > BigInt(a.id) ? 1 : -1))
          .filter((s) => !maxId || BigInt(s.id) < BigInt(maxId))
          .slice(0, limit);
        return { status: 200, body: list.map(statusJson) };
      }

      return null;
    },
  };
  return fake;
}
