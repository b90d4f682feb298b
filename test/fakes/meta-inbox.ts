import { randomBytes } from 'node:crypto';
import { metaAnswers } from './documented-errors.ts';
import type { FakeRequest, FakeResponse, InboxSeed } from './server.ts';

// What the Facebook and Instagram fakes' inboxes share (test/fakes/facebook.ts, instagram.ts):
// Graph field expansion with modifiers (`comments.filter(stream).limit(50){id,message}`), and the
// Page conversations of the Messenger Platform ("Conversations" and "Send API" references,
// developers.facebook.com/docs/messenger-platform):
//   GET  /{page-id}/conversations?platform=messenger|instagram&fields=id,updated_time,messages.limit(n){…}
//        newest updated first, cursor paging only (the edge documents no time-based paging)
//   GET  /{conversation-id}/messages?fields=id,message,created_time,from   newest first
//   GET  /{conversation-id}?fields=messages{…}
//   POST /{page-id}/messages  recipient={"id"}, messaging_type, message={"text"} → {recipient_id, message_id};
//        more than 24 hours after the person's last message: code 10 with subcode 2018278
//        (Messenger) or 2534022 (Instagram), "This message is sent outside of allowed window."
//        (Messenger Platform "Error Codes"); a recipient with no conversation: code 100 subcode 2018001.

export interface FieldSpec {
  name: string;
  mods: Record<string, string>;
  sub: FieldSpec[];
}

/** `a,b.limit(2){c,d{e}},f` → specs with their modifiers and sub-fields. */
export function fieldSpecs(raw: string | null | undefined): FieldSpec[] {
  if (!raw) return [];
  const tokens: string[] = [];
  let depth = 0;
  let cur = '';
  for (const ch of raw) {
    if (ch === '{' || ch === '(') depth++;
    if (ch === '}' || ch === ')') depth--;
    if (ch === ',' && depth === 0) {
      tokens.push(cur);
      cur = '';
    } else cur += ch;
  }
  tokens.push(cur);
  return tokens
    .map((t) => t.trim())
    .filter(Boolean)
    .map((t) => {
      const name = /^[a-z_]+/i.exec(t)?.[0] ?? t;
      let rest = t.slice(name.length);
      const mods: Record<string, string> = {};
      for (let m = /^\.([a-z_]+)\(([^)]*)\)/i.exec(rest); m; m = /^\.([a-z_]+)\(([^)]*)\)/i.exec(rest)) {
        mods[m[1] as string] = m[2] as string;
        rest = rest.slice(m[0].length);
      }
      const sub = rest.startsWith('{') && rest.endsWith('}') ? fieldSpecs(rest.slice(1, -1)) : [];
      return { name, mods, sub };
    });
}

/** The params a nested edge's modifiers amount to (limit, after), for pageOf. */
export const modParams = (spec: FieldSpec): URLSearchParams =>
  new URLSearchParams(Object.entries(spec.mods).filter(([k]) => k === 'limit' || k === 'since'));

export interface FakeMessage {
  id: string;
  message: string;
  from: { id: string; name?: string; username?: string };
  createdAt: number;
}

export interface FakeConversation {
  id: string;
  platform: 'messenger' | 'instagram';
  /** The person on the other side (a Page- or Instagram-scoped id). */
  participant: { id: string; name?: string; username?: string };
  messages: FakeMessage[];
}

const graphTime = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, '+0000');

const cursorOf = (n: number) => Buffer.from(String(n)).toString('base64url');

/** Newest first, `limit` and `after` as the Graph edges page them. */
function paged<T>(items: T[], params: URLSearchParams) {
  const limit = Math.min(100, Number(params.get('limit') ?? 25) || 25);
  const start = Number(Buffer.from(params.get('after') ?? '', 'base64url').toString() || 0);
  const data = items.slice(start, start + limit);
  if (!data.length) return { data };
  const end = start + data.length;
  return {
    data,
    paging: {
      cursors: { before: cursorOf(start), after: cursorOf(end) },
      ...(end < items.length ? { next: `next-page-after-${end}` } : {}),
    },
  };
}

export class FakeConversations {
  list: FakeConversation[] = [];

  constructor(
    private readonly platform: 'messenger' | 'instagram',
    /** Subcode of the 24-hour window refusal. */
    private readonly windowSubcode: number,
  ) {}

  reset(): void {
    this.list = [];
  }

  /** A person writes to the account. */
  seed(seed: InboxSeed, person: { id: string; name?: string; username?: string }): { platform_id: string } {
    const at = seed.created_at ? Date.parse(seed.created_at) : Date.now();
    const convId = seed.conversation ?? `t_${person.id}`;
    let conv = this.list.find((c) => c.id === convId);
    if (!conv) {
      conv = { id: convId, platform: this.platform, participant: person, messages: [] };
      this.list.push(conv);
    }
    const m: FakeMessage = {
      id: `m_${randomBytes(12).toString('base64url')}`,
      message: seed.text,
      from: person,
      createdAt: Number.isFinite(at) ? at : Date.now(),
    };
    conv.messages.push(m);
    return { platform_id: m.id };
  }

  private updated = (c: FakeConversation) => Math.max(0, ...c.messages.map((m) => m.createdAt));

  private messageRow(m: FakeMessage, fields: FieldSpec[]): Record<string, unknown> {
    const row: Record<string, unknown> = { id: m.id };
    for (const f of fields.length ? fields : fieldSpecs('id,message,created_time')) {
      if (f.name === 'message') row.message = m.message;
      if (f.name === 'created_time') row.created_time = graphTime(m.createdAt);
      if (f.name === 'from') row.from = m.from;
    }
    return row;
  }

  private messages(c: FakeConversation, fields: FieldSpec[], params: URLSearchParams) {
    const sorted = [...c.messages].sort((a, b) => b.createdAt - a.createdAt);
    const page = paged(sorted, params);
    return { ...page, data: page.data.map((m) => this.messageRow(m, fields)) };
  }

  private conversationRow(c: FakeConversation, fields: FieldSpec[]): Record<string, unknown> {
    const row: Record<string, unknown> = { id: c.id };
    for (const f of fields) {
      if (f.name === 'updated_time') row.updated_time = graphTime(this.updated(c));
      if (f.name === 'messages') row.messages = this.messages(c, f.sub, modParams(f));
      if (f.name === 'participants') row.participants = { data: [c.participant] };
    }
    return row;
  }

  /**
   * The conversation routes, for the account `accountId` (the Page; messages it sends are from
   * `self`); null for other paths. `granted`: the token holds the messaging permission.
   */
  handle(
    req: FakeRequest,
    params: URLSearchParams,
    node: string,
    edge: string | undefined,
    o: { accountId: string; self: FakeMessage['from']; granted: boolean; denied: FakeResponse },
  ): FakeResponse | null {
    const fields = fieldSpecs(params.get('fields'));
    if (node === o.accountId && edge === 'conversations' && req.method === 'GET') {
      if (!o.granted) return o.denied;
      const platform = params.get('platform') ?? 'messenger';
      const convs = this.list
        .filter((c) => c.platform === platform)
        .sort((a, b) => this.updated(b) - this.updated(a));
      const page = paged(convs, params);
      return {
        status: 200,
        body: { ...page, data: page.data.map((c) => this.conversationRow(c, fields)) },
      };
    }
    if (node === o.accountId && edge === 'messages' && req.method === 'POST') {
      if (!o.granted) return o.denied;
      return this.send(params, o.self);
    }
    const conv = this.list.find((c) => c.id === node);
    if (!conv || req.method !== 'GET') return null;
    if (!o.granted) return o.denied;
    if (edge === 'messages') return { status: 200, body: this.messages(conv, fields, params) };
    if (!edge) return { status: 200, body: this.conversationRow(conv, fields) };
    return null;
  }

  private send(params: URLSearchParams, self: FakeMessage['from']): FakeResponse {
    const parse = (k: string) => {
      try {
        return JSON.parse(params.get(k) ?? '') as Record<string, unknown>;
      } catch {
        return null;
      }
    };
    const recipient = parse('recipient');
    const message = parse('message');
    const text = typeof message?.text === 'string' ? message.text : '';
    if (!text.trim()) return metaAnswers.graph(100, '(#100) The parameter message is required');
    if ([...text].length > 2000)
      return metaAnswers.graph(
        100,
        '(#100) Length of param message[text] must be less than or equal to 2000',
      );
    const conv = this.list.find((c) => c.participant.id === recipient?.id);
    if (!conv) return metaAnswers.graph(100, 'No matching user found', { subcode: 2018001 });
    const last = Math.max(
      0,
      ...conv.messages.filter((m) => m.from.id === conv.participant.id).map((m) => m.createdAt),
    );
    if (Date.now() - last > 24 * 3600_000)
      return metaAnswers.graph(10, '(#10) This message is sent outside of allowed window.', {
        subcode: this.windowSubcode,
        type: 'OAuthException',
      });
    const m: FakeMessage = {
      id: `m_${randomBytes(12).toString('base64url')}`,
      message: text,
      from: self,
      createdAt: Date.now(),
    };
    conv.messages.push(m);
    return { status: 200, body: { recipient_id: conv.participant.id, message_id: m.id } };
  }
}

/** The seed's time (ms): its `created_at`, else now. */
export const seedTime = (seed: InboxSeed): number => {
  const t = seed.created_at ? Date.parse(seed.created_at) : Number.NaN;
  return Number.isFinite(t) ? t : Date.now();
};
