import { canManageChannels } from '#core/accounts';
import { isId } from '#core/ids';
import { ActError, type SignedIn } from '#core/people';
import { CONSOLE_PATH } from '#core/vocabulary';
import { actorOf, consolePage, frameOf, orgOf } from '#handlers/support/console';
import {
  CHANNELS_PATH,
  type ConnectState,
  channelsPage,
  connectionPage,
  disconnectPage,
  fieldId,
  reconnectPage,
  returnPage,
} from '#handlers/views/channels';
import { messageOf, withMessage } from '#handlers/views/layout';
import { statusPage } from '#handlers/views/status';
import {
  type ConsoleAnswer,
  type PersonRequest,
  pageAnswer,
  redirectAnswer,
  returnPath,
  SIGN_IN_PATH,
} from '#shared/console';
import {
  type ChannelsOverview,
  type ConnectForm,
  channelOf,
  channelsOverview,
  connectionOutcome,
  disconnect,
  disconnectPreview,
  FieldsRefused,
  selectAccount,
  startConnect,
} from '#usecases/console-channels';
import { consoleGate } from '#usecases/support/console-gate';

// Channels: the list (everyone), connect / reconnect / disconnect (owners and admins — the use cases
// decide; a member's POST gets their 403), and a connection session's page, where the platform's
// consent comes back to. The use cases are the API's, wrapped with the role check and the audit.

const ACTS = ['reconnect', 'disconnect'] as const;

const formOf = (form: URLSearchParams): ConnectForm => ({
  platform: form.get('platform') ?? '',
  instance: form.get('instance') ?? undefined,
  identifier: form.get('identifier') ?? undefined,
  // Never shown again: a refused form asks for the app password anew.
  app_password: form.get('app_password') ?? undefined,
  service: form.get('service') ?? undefined,
});

/** A refused form's errors, each linked to its field's id; the app password is not echoed back. */
function refusedState(
  err: FieldsRefused,
  form: ConnectForm,
  firstPlatform: string | undefined,
): ConnectState {
  const { app_password: _secret, ...kept } = form;
  return {
    form: kept,
    errors: err.fields.map((f) => ({ field: fieldId(f.field, firstPlatform), message: f.message })),
  };
}

const firstReady = (o: ChannelsOverview) => o.oauth.find((p) => p.ready)?.platform;

async function listPage(req: PersonRequest, opts: { connect?: ConnectState; status?: number } = {}) {
  const { signedIn } = req;
  const [frame, overview] = await Promise.all([
    frameOf(signedIn),
    channelsOverview({ orgId: orgOf(signedIn), actor: actorOf(signedIn) }),
  ]);
  return pageAnswer(
    channelsPage({
      frame,
      origin: req.site.origin,
      overview,
      canManage: canManageChannels(signedIn.user.role),
      message: messageOf(req.query),
      ...(opts.connect ? { connect: opts.connect } : {}),
    }),
    { status: opts.status ?? 200 },
  );
}

/** After a connect: Bluesky is live at once; the others go to the session's page (consent next). */
function started(result: Awaited<ReturnType<typeof startConnect>>): ConsoleAnswer {
  if (result.kind === 'consent') return redirectAnswer(`${CHANNELS_PATH}/connections/${result.connectionId}`);
  return redirectAnswer(
    withMessage(CHANNELS_PATH, result.reconnected ? 'channel_reconnected' : 'channel_connected'),
  );
}

const STATUS_OF = { not_found: 404, forbidden: 403, conflict: 409, invalid: 400, rate_limited: 429 } as const;

export const { handler } = consolePage('consoleChannels', {
  'GET /console/channels': {
    who: 'person',
    run: async (req) => {
      const { signedIn, query } = req;
      const disconnecting = query.get('disconnect');
      const reconnecting = query.get('reconnect');
      if (disconnecting === null && reconnecting === null) return listPage(req);
      const orgId = orgOf(signedIn);
      const actor = actorOf(signedIn);
      if (disconnecting !== null) {
        const [frame, preview] = await Promise.all([
          frameOf(signedIn),
          disconnectPreview({ orgId, actor, channelId: disconnecting }),
        ]);
        return pageAnswer(disconnectPage({ frame, preview }));
      }
      const [frame, channel] = await Promise.all([
        frameOf(signedIn),
        channelOf({ orgId, actor, channelId: reconnecting ?? '' }),
      ]);
      if (!canManageChannels(signedIn.user.role))
        throw new ActError('Only owners and admins reconnect channels.', 'forbidden');
      if (channel.platform !== 'bluesky' && channel.platform !== 'mastodon')
        throw new ActError('This channel reconnects at its platform: use its Reconnect button.', 'invalid');
      return pageAnswer(reconnectPage({ frame, channel }));
    },
  },
  'POST /console/channels': {
    who: 'person',
    run: async (req) => {
      const { signedIn, form, now } = req;
      const connect = formOf(form);
      try {
        return started(
          await startConnect({
            orgId: orgOf(signedIn),
            actor: actorOf(signedIn),
            consoleOrigin: req.site.origin,
            form: connect,
            now,
          }),
        );
      } catch (err) {
        // A refused form is shown again, filled in (but the password), with the reason by its field.
        if (!(err instanceof FieldsRefused)) throw err;
        const overview = await channelsOverview({ orgId: orgOf(signedIn), actor: actorOf(signedIn) });
        return listPage(req, { connect: refusedState(err, connect, firstReady(overview)), status: 400 });
      }
    },
  },
  'GET /console/channels/connections/{id}': {
    // Reached from the platform's site: its first request carries no SameSite=Strict cookie, so
    // this route reads the session itself (see returnPage).
    who: 'anyone',
    run: async (req) => {
      const id = req.params.id ?? '';
      if (id === 'return') {
        const connectionId = req.query.get('connection_id') ?? '';
        if (!isId('connection', connectionId))
          throw new ActError('This link names no connection. Start again from Channels.', 'not_found');
        return pageAnswer(returnPage(connectionId));
      }
      const cookie = req.cookies[req.site.sessionCookie];
      const signedIn = cookie ? await consoleGate.resolve(cookie, req.now) : null;
      if (!signedIn) {
        // Back to this connection's outcome after signing in, as the pipeline does for a GET.
        const next = returnPath(`${CONSOLE_PATH}/channels/connections/${encodeURIComponent(id)}`);
        return redirectAnswer(next ? `${SIGN_IN_PATH}?${new URLSearchParams({ next })}` : SIGN_IN_PATH);
      }
      try {
        return await sessionPage(signedIn, id, req.now);
      } catch (err) {
        if (!(err instanceof ActError)) throw err;
        // As the pipeline would answer a signed-in person: the status page inside their frame.
        const status = STATUS_OF[err.kind];
        const orgName = (await consoleGate.orgName?.(signedIn)) ?? undefined;
        return pageAnswer(
          statusPage({ status, message: err.message, requestId: req.requestId, signedIn, orgName }),
          { status },
        );
      }
    },
  },
  'POST /console/channels/connections/{id}': {
    who: 'person',
    run: async ({ signedIn, params, form, now }) => {
      const connectionId = params.id ?? '';
      try {
        await selectAccount({
          orgId: orgOf(signedIn),
          actor: actorOf(signedIn),
          connectionId,
          accountId: form.get('account_id') ?? '',
          now,
        });
        return redirectAnswer(`${CHANNELS_PATH}/connections/${connectionId}`);
      } catch (err) {
        if (!(err instanceof FieldsRefused)) throw err;
        const first = await connectionOutcome({
          orgId: orgOf(signedIn),
          actor: actorOf(signedIn),
          connectionId,
          now,
        });
        const errors = err.fields.map((f) => ({
          field: fieldId(f.field, first.accounts?.[0]?.id),
          message: f.message,
        }));
        return pageAnswer(
          connectionPage({
            frame: await frameOf(signedIn),
            session: first,
            canManage: canManageChannels(signedIn.user.role),
            errors,
          }),
          { status: 400 },
        );
      }
    },
  },
  'POST /console/channels/{id}/{act}': {
    who: 'person',
    run: async (req) => {
      const { signedIn, params, form, now } = req;
      const act = params.act ?? '';
      const channelId = params.id ?? '';
      if (!(ACTS as readonly string[]).includes(act))
        throw new ActError('There is no such act on a channel.', 'not_found');
      const orgId = orgOf(signedIn);
      const actor = actorOf(signedIn);
      if (act === 'disconnect') {
        await disconnect({ orgId, actor, channelId, now });
        return redirectAnswer(withMessage(CHANNELS_PATH, 'channel_disconnected'));
      }
      const channel = await channelOf({ orgId, actor, channelId });
      const connect = { ...formOf(form), platform: channel.platform };
      try {
        return started(
          await startConnect({ orgId, actor, consoleOrigin: req.site.origin, form: connect, channelId, now }),
        );
      } catch (err) {
        if (!(err instanceof FieldsRefused)) throw err;
        // OAuth platforms have no form to show again: their refusal is the page's.
        if (channel.platform !== 'bluesky' && channel.platform !== 'mastodon')
          throw new ActError(err.message, 'conflict');
        return pageAnswer(
          reconnectPage({
            frame: await frameOf(signedIn),
            channel,
            connect: refusedState(err, connect, undefined),
          }),
          { status: 400 },
        );
      }
    },
  },
});

async function sessionPage(signedIn: SignedIn, connectionId: string, now: Date): Promise<ConsoleAnswer> {
  const [frame, session] = await Promise.all([
    frameOf(signedIn),
    connectionOutcome({ orgId: orgOf(signedIn), actor: actorOf(signedIn), connectionId, now }),
  ]);
  return pageAnswer(connectionPage({ frame, session, canManage: canManageChannels(signedIn.user.role) }));
}
