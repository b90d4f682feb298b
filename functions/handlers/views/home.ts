import { canChangeSettings, canMintKeys, type Role } from '#core/accounts';
import { html, type SafeHtml } from '#core/html';
import type { PostResource } from '#core/posts';
import { CONSOLE_PATH } from '#core/vocabulary';
import type { Overview } from '#usecases/overview';
import { type Frame, layout, live, when } from './layout.ts';
import { dataTable } from './table.ts';

// The overview: a new workspace's first steps (until each is done), what needs a person (each a
// link to where it is acted on), the month's meters, the 14-day publish timeline, and where to go
// from here. "Needs a person" refreshes itself (htmx).

const ROLE_SUMMARY: Record<Role, string> = {
  owner:
    'As an owner you run everything here: channels, posts, webhooks, keys, members, settings and the audit log.',
  admin:
    'As an admin you connect channels, approve and manage posts, run webhooks, and mint and revoke API keys.',
  member: 'As a member you see the workspace; owners and admins make the changes.',
};

const METER_LABELS: Record<string, string> = {
  api_requests: 'API requests',
  posts_per_month: 'Scheduled and published posts',
  channels: 'Channels',
  ai_credits: 'AI generation credits',
};

const PLATFORM_NAMES: Record<string, string> = {
  x: 'X',
  linkedin: 'LinkedIn',
  bluesky: 'Bluesky',
  mastodon: 'Mastodon',
  threads: 'Threads',
  instagram: 'Instagram',
  facebook: 'Facebook',
  tiktok: 'TikTok',
  youtube: 'YouTube',
  pinterest: 'Pinterest',
};
export const platformName = (p: string) => PLATFORM_NAMES[p] ?? p;

const number = (n: number) => n.toLocaleString('en-GB');

export function homePage(o: {
  frame: Frame;
  role: Role;
  overview: Overview;
  message?: string | null;
}): SafeHtml {
  const { usage, stats } = o.overview;
  return layout({
    title: 'Overview',
    frame: o.frame,
    section: 'home',
    message: o.message ?? null,
    body: html`<h1 class="heading">${o.frame.orgName ?? 'Your workspace'}</h1>
<p class="lead">${ROLE_SUMMARY[o.role]} <span class="tag">${usage.plan} plan</span></p>
${firstSteps(o.overview.start, o.role)}
<h2 class="heading heading--m" id="needs-heading">Needs a person</h2>
${live({ id: 'needs', url: CONSOLE_PATH, seconds: 10, body: needs(o.overview.needs, o.overview.start.channel) })}
<h2 class="heading heading--m">This month</h2>
${meters(usage.meters)}
<h2 class="heading heading--m">Last 14 days</h2>
${timeline(stats.timeline)}
<p>Deliveries so far: ${number(stats.deliveries.published)} published, ${number(stats.deliveries.failed)} failed${stats.deliveries.success_rate === null ? '' : html` (${Math.round(stats.deliveries.success_rate * 100)}% succeeded)`}. <a href="${CONSOLE_PATH}/posts">See the posts</a>.</p>
<h2 class="heading heading--m">Manage</h2>
${cards(o.role)}`,
  });
}

function postLabel(p: PostResource): string {
  const text = p.title ?? p.body ?? p.variants[0]?.body ?? p.id;
  return text.length > 80 ? `${text.slice(0, 79)}…` : text;
}

const STEPS: ReadonlyArray<{ done: keyof Overview['start']; href: string; label: string; text: string }> = [
  {
    done: 'channel',
    href: `${CONSOLE_PATH}/channels`,
    label: 'Connect a channel',
    text: 'an account Herald publishes to.',
  },
  {
    done: 'key',
    href: `${CONSOLE_PATH}/keys`,
    label: 'Mint an API key',
    text: 'for the application or agent that creates the posts.',
  },
  {
    done: 'people',
    href: `${CONSOLE_PATH}/members`,
    label: 'Invite someone',
    text: 'to approve posts or run the workspace with you.',
  },
];

/** Until a workspace has a channel, a key and a second person: what to do first, each ticked once done. */
function firstSteps(start: Overview['start'], role: Role): SafeHtml {
  if (STEPS.every((s) => start[s.done])) return html``;
  return html`<section id="first-steps" class="steps" aria-labelledby="first-steps-heading">
<h2 class="heading heading--m" id="first-steps-heading">First steps</h2>
${role === 'member' && html`<p>Owners and admins take these steps; owners invite people.</p>`}
<ol class="steps__list">${STEPS.map((s) =>
    start[s.done]
      ? html`<li class="steps__item steps__item--done"><span class="tag tag--green">Done</span> <a href="${s.href}">${s.label}</a>: ${s.text}</li>`
      : html`<li class="steps__item"><span class="tag tag--grey">To do</span> <a href="${s.href}">${s.label}</a>: ${s.text}</li>`,
  )}</ol>
</section>`;
}

function needs(n: Overview['needs'], hasChannels: boolean): SafeHtml {
  const items: SafeHtml[] = [
    ...n.channels.map(
      (c) =>
        html`<li><span class="tag tag--red">${c.status === 'reauth_required' ? 'Re-authorize' : 'Error'}</span> ${platformName(c.platform)} channel <strong>${c.handle}</strong> ${c.status === 'reauth_required' ? 'needs a person to sign in to the platform again' : 'is failing'}: <a href="${CONSOLE_PATH}/channels#channel-${c.id}">${c.status === 'reauth_required' ? 'reconnect it' : 'see the error'}<span class="visually-hidden"> (${c.handle})</span></a></li>`,
    ),
    ...(n.approvals.total > 0
      ? [
          html`<li><span class="tag tag--yellow">Approval</span> ${n.approvals.total === 1 ? '1 post waits' : `${number(n.approvals.total)} posts wait`} for approval: <a href="${CONSOLE_PATH}/approvals">review ${n.approvals.total === 1 ? 'it' : 'them'}</a>
<ul>${n.approvals.posts.map((p) => html`<li><a href="${CONSOLE_PATH}/posts/${p.id}">${postLabel(p)}</a></li>`)}</ul></li>`,
        ]
      : []),
    ...n.failed.map(
      (p) =>
        html`<li><span class="tag tag--red">Failed</span> <a href="${CONSOLE_PATH}/posts/${p.id}">${postLabel(p)}</a>: ${p.deliveries.find((d) => d.stage === 'failed')?.error ?? 'a delivery failed'} <span class="muted">(${when(p.updated_at)})</span></li>`,
    ),
    ...n.endpoints.map(
      (e) =>
        html`<li><span class="tag tag--red">Disabled</span> Webhook endpoint <code>${e.url}</code> was turned off after failing deliveries: <a href="${CONSOLE_PATH}/webhooks/${e.id}">see its log and re-enable it</a></li>`,
    ),
  ];
  if (!items.length)
    return html`<div class="needs needs--clear"><p>Nothing needs you right now: ${hasChannels ? 'every channel is live, ' : ''}no post waits for approval or failed in the last days, and no webhook endpoint is turned off.</p></div>`;
  return html`<div class="needs"><ul class="plain">${items}</ul></div>`;
}

function meters(list: Overview['usage']['meters']): SafeHtml {
  return html`<ul class="meters">${list.map((m) => {
    const id = `meter-${m.key}`;
    const label = METER_LABELS[m.key] ?? m.key;
    return html`<li class="meter${m.remaining === 0 ? ' meter--full' : ''}">
<p><label for="${id}"><strong>${label}</strong></label></p>
<progress id="${id}" max="${m.limit}" value="${Math.min(m.used, m.limit)}">${number(m.used)} of ${number(m.limit)}</progress>
<p>${number(m.used)} of ${number(m.limit)} used, <strong>${number(m.remaining)} left</strong>.<br><span class="muted">${m.key === 'channels' ? 'Connected channels; disconnecting one frees its place.' : html`Resets ${when(m.period_ends_at)}.`}</span></p>
</li>`;
  })}</ul>`;
}

const CHART = { width: 560, height: 160, top: 10, bottom: 24, left: 28 } as const;

/** Published and failed per day as stacked bars (SVG attributes only: the CSP forbids inline styles), with the numbers as a table. */
function timeline(days: Overview['stats']['timeline']): SafeHtml {
  const max = Math.max(1, ...days.map((d) => d.published + d.failed));
  const plot = CHART.height - CHART.top - CHART.bottom;
  const step = (CHART.width - CHART.left) / days.length;
  const bar = Math.max(4, step * 0.6);
  const y = (n: number) => (n / max) * plot;
  const total = days.reduce(
    (s, d) => ({ published: s.published + d.published, failed: s.failed + d.failed }),
    {
      published: 0,
      failed: 0,
    },
  );
  // An empty chart would be a 0–1 axis with nothing on it: say so instead.
  if (total.published + total.failed === 0)
    return html`<p class="muted" id="timeline-empty">Nothing published yet in the last ${days.length} days: the chart fills in as posts go out.</p>`;
  const summary = `Deliveries per day over the last ${days.length} days: ${total.published} published and ${total.failed} failed in all; the busiest day had ${max}.`;
  return html`<figure>
<svg class="chart" viewBox="0 0 ${CHART.width} ${CHART.height}" role="img" aria-labelledby="timeline-title">
<title id="timeline-title">${summary}</title>
<text class="chart__axis" x="0" y="${CHART.top + 8}">${max}</text>
<text class="chart__axis" x="0" y="${CHART.height - CHART.bottom}">0</text>
${days.map((d, i) => {
  const x = CHART.left + i * step + (step - bar) / 2;
  const base = CHART.height - CHART.bottom;
  const ph = y(d.published);
  const fh = y(d.failed);
  return html`<g><rect class="chart__published" x="${x.toFixed(1)}" y="${(base - ph).toFixed(1)}" width="${bar.toFixed(1)}" height="${ph.toFixed(1)}"></rect><rect class="chart__failed" x="${x.toFixed(1)}" y="${(base - ph - fh).toFixed(1)}" width="${bar.toFixed(1)}" height="${fh.toFixed(1)}"></rect>${i % 2 === days.length % 2 ? '' : html`<text class="chart__axis" x="${(x + bar / 2).toFixed(1)}" y="${CHART.height - 6}" text-anchor="middle">${d.date.slice(8, 10)}</text>`}</g>`;
})}
</svg>
<figcaption><span class="legend-key legend-key--published"></span>Published <span class="legend-key legend-key--failed"></span>Failed · days of the month, UTC, today last</figcaption>
</figure>
<details><summary>The numbers per day</summary>
${dataTable({
  id: 'timeline',
  caption: 'Deliveries per day',
  columns: [{ label: 'Day' }, { label: 'Published' }, { label: 'Failed' }],
  rows: days.map((d) => [
    html`<time datetime="${d.date}">${d.date}</time>`,
    String(d.published),
    String(d.failed),
  ]),
})}
</details>`;
}

function cards(role: Role): SafeHtml {
  const list = [
    {
      href: `${CONSOLE_PATH}/channels`,
      title: 'Channels',
      text: 'The accounts Herald publishes to, their health, connecting more.',
    },
    {
      href: `${CONSOLE_PATH}/posts`,
      title: 'Posts',
      text: 'Every post, its schedule and how each channel took it.',
    },
    {
      href: `${CONSOLE_PATH}/media`,
      title: 'Media',
      text: 'The files posts use, their facts and previews, alt text suggestions.',
    },
    {
      href: `${CONSOLE_PATH}/webhooks`,
      title: 'Webhooks',
      text: 'Endpoints, their delivery log, the failure ladder.',
    },
    {
      href: `${CONSOLE_PATH}/keys`,
      title: 'API keys',
      text: canMintKeys(role)
        ? 'Mint keys for your applications, see when they were last used, revoke them.'
        : 'The keys your applications use, and when they were last used.',
    },
    {
      href: `${CONSOLE_PATH}/members`,
      title: 'Members',
      text:
        role === 'owner'
          ? 'Invite people, change their roles, remove them.'
          : 'The people of this workspace and their roles.',
    },
    {
      href: `${CONSOLE_PATH}/settings`,
      title: 'Settings',
      text: canChangeSettings(role)
        ? 'Dangerous AI operations, approvals and landing origins.'
        : 'The workspace rules the API applies.',
    },
    ...(role === 'owner'
      ? [{ href: `${CONSOLE_PATH}/audit`, title: 'Audit log', text: 'Who did what, and when.' }]
      : []),
    {
      href: `${CONSOLE_PATH}/passkeys`,
      title: 'Your passkeys',
      text: 'Add a passkey on another device, or remove one.',
    },
  ];
  return html`<ul class="cards">${list.map(
    (c) =>
      html`<li class="card"><h3 class="heading heading--s"><a href="${c.href}">${c.title}</a></h3><p>${c.text}</p></li>`,
  )}</ul>`;
}
