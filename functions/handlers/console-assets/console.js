// Herald console: the little the pages cannot do without script — passkey ceremonies (with the
// SimpleWebAuthn browser library, webauthn.js) and copy buttons. Loaded from our own origin only
// (the Content-Security-Policy allows no inline script); every fetch is same-origin, so the browser
// sends the Origin header the server checks.
(() => {
  /** POSTs JSON and returns the JSON answer, or throws with the server's (or the gateway's) message. */
  async function post(url, body) {
    const res = await fetch(url, {
      method: 'POST',
      credentials: 'same-origin',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify(body),
    });
    const data = await res.json().catch(() => ({}));
    if (res.status === 401 && data.redirect) {
      window.location.assign(data.redirect);
      throw new Error('Your session has ended. Sign in again.');
    }
    if (!res.ok) {
      const message = data.error?.message ?? data.message ?? `The server answered ${res.status}.`;
      throw new Error(res.status === 429 ? `${message} Wait a minute, then try again.` : message);
    }
    return data;
  }

  /** What a browser's WebAuthn error means to a person. */
  function explain(err) {
    if (err?.name === 'NotAllowedError' || err?.name === 'AbortError')
      return 'The passkey request was cancelled or timed out. Try again when you are ready.';
    if (err?.name === 'InvalidStateError') return 'This device already has a passkey for your account.';
    if (err?.name === 'SecurityError')
      return 'Passkeys cannot be used on this address. Open the console through its own address (localhost, not 127.0.0.1).';
    return err?.message || 'Something went wrong. Try again.';
  }

  function setUpCeremony(block) {
    const start = block.querySelector('[data-ceremony-start]');
    const status = block.querySelector('[data-ceremony-status]');
    const errorBox = block.querySelector('[data-ceremony-error]');
    const errorText = block.querySelector('[data-ceremony-error-text]');
    const nameInput = block.querySelector('input[name="name"]');
    const webauthn = window.SimpleWebAuthnBrowser;
    if (!start) return;
    if (!webauthn?.browserSupportsWebAuthn()) {
      block.querySelector('.ceremony__unsupported')?.removeAttribute('hidden');
      return;
    }
    start.removeAttribute('hidden');
    const kind = block.dataset.ceremony;

    const fail = (err) => {
      status.textContent = '';
      errorText.textContent = explain(err);
      errorBox.removeAttribute('hidden');
      errorBox.focus();
      start.disabled = false;
    };

    start.addEventListener('click', async () => {
      start.disabled = true;
      errorBox.setAttribute('hidden', '');
      try {
        const request = {};
        if (kind === 'enroll') {
          // The link's secret is in the fragment: never sent to a server except here, in the body.
          const token = window.location.hash.slice(1);
          if (!token)
            throw new Error(
              'This page needs the whole enrollment link, including the part after “#”. Open the link again.',
            );
          request.token = token;
        }
        status.textContent = 'Asking the server…';
        const started = await post(block.dataset.options, request);
        if (started.email)
          status.textContent = `Creating a passkey for ${started.email} in ${started.orgName}…`;
        else status.textContent = 'Waiting for your passkey…';
        const response =
          kind === 'sign-in'
            ? await webauthn.startAuthentication({ optionsJSON: started.options })
            : await webauthn.startRegistration({ optionsJSON: started.options });
        status.textContent = 'Checking…';
        const answer = { response };
        if (nameInput?.value.trim()) answer.name = nameInput.value.trim();
        const done = await post(block.dataset.finish, answer);
        status.textContent = 'Done.';
        window.location.assign(done.redirect);
      } catch (err) {
        fail(err);
      }
    });
  }

  function setUpCopy(button) {
    const target = document.getElementById(button.dataset.copy);
    if (!target || !navigator.clipboard) return;
    button.removeAttribute('hidden');
    button.addEventListener('click', async () => {
      try {
        await navigator.clipboard.writeText(target.value ?? target.textContent);
        button.textContent = 'Copied';
      } catch {
        target.select?.();
        button.textContent = 'Select and copy it';
      }
    });
  }

  function start() {
    for (const block of document.querySelectorAll('[data-ceremony]')) setUpCeremony(block);
    for (const button of document.querySelectorAll('button[data-copy]')) setUpCopy(button);
    // An error summary takes the focus, so screen readers announce it first (GOV.UK pattern).
    document.querySelector('[data-autofocus]')?.focus();
  }

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start);
  else start();
})();
