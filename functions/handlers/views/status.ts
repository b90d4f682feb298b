import { html, type SafeHtml } from '#core/html';
import { CONSOLE_PATH } from '#core/vocabulary';
import type { StatusPage } from '#shared/console';
import { layout } from './layout.ts';

// The page of a refused or failed request: what happened in words, a way back, and nothing else.

const TITLES: Record<number, string> = {
  400: 'There is a problem',
  403: 'You cannot do that',
  404: 'Page not found',
  409: 'That could not be done',
  413: 'That was too much to send',
  429: 'Too many attempts',
  500: 'Sorry, something went wrong',
};

export function statusPage({ status, message, signedIn, orgName }: StatusPage): SafeHtml {
  const title = TITLES[status] ?? (status >= 500 ? 'Sorry, something went wrong' : 'There is a problem');
  return layout({
    title,
    frame: { signedIn, orgName },
    body: html`<h1 class="heading">${title}</h1>
<p class="lead">${message}</p>
${status === 429 && html`<p>Wait a minute, then try again.</p>`}
<p><a href="${signedIn ? CONSOLE_PATH : `${CONSOLE_PATH}/sign-in`}">${signedIn ? 'Back to the console' : 'Go to sign-in'}</a></p>`,
  });
}
