import { createHash, generateKeyPairSync, type KeyObject, randomBytes, sign } from 'node:crypto';

// A software WebAuthn authenticator for the unit tests: real P-256 keys, real clientDataJSON and
// authenticatorData (rpIdHash, flags, signature counter, attested credential data), a 'none'
// attestation in CBOR and ES256 signatures, so the server's checks run on the real cryptography.
// Each option a browser or an attacker could change (origin, rp id, counter, user handle) can be
// set per call.

// ---- a tiny CBOR encoder: the few shapes WebAuthn needs ------------------------------------------

type Cbor = number | string | Uint8Array | Map<number | string, Cbor>;

function head(major: number, n: number): Buffer {
  if (n < 24) return Buffer.from([(major << 5) | n]);
  if (n < 0x100) return Buffer.from([(major << 5) | 24, n]);
  if (n < 0x10000) return Buffer.from([(major << 5) | 25, n >> 8, n & 0xff]);
  const b = Buffer.alloc(5);
  b[0] = (major << 5) | 26;
  b.writeUInt32BE(n, 1);
  return b;
}

export function cbor(v: Cbor): Buffer {
  if (typeof v === 'number') return v >= 0 ? head(0, v) : head(1, -1 - v);
  if (typeof v === 'string') {
    const bytes = Buffer.from(v, 'utf8');
    return Buffer.concat([head(3, bytes.length), bytes]);
  }
  if (v instanceof Uint8Array) return Buffer.concat([head(2, v.length), Buffer.from(v)]);
  return Buffer.concat([head(5, v.size), ...[...v].flatMap(([k, x]) => [cbor(k), cbor(x)])]);
}

// ---- the authenticator -------------------------------------------------------------------------

const b64u = (b: Uint8Array | string) => Buffer.from(b).toString('base64url');
const sha256 = (b: Uint8Array | string) => createHash('sha256').update(b).digest();

export interface SoftCredential {
  id: string;
  rpId: string;
  /** base64url user.id from the creation options (the assertion's userHandle). */
  userHandle: string;
  privateKey: KeyObject;
  counter: number;
}

/** Flags: user present, user verified, attested credential data. */
const UP = 0x01;
const UV = 0x04;
const AT = 0x40;

function authData(rpId: string, flags: number, counter: number, attested?: Buffer): Buffer {
  const c = Buffer.alloc(4);
  c.writeUInt32BE(counter >>> 0);
  return Buffer.concat([sha256(rpId), Buffer.from([flags]), c, ...(attested ? [attested] : [])]);
}

interface CreationOptions {
  challenge: string;
  rp: { id?: string | undefined };
  user: { id: string };
}

interface RequestOptions {
  challenge: string;
  rpId?: string | undefined;
}

export class SoftAuthenticator {
  readonly credentials: SoftCredential[] = [];
  /** Counters start at 0 and grow by `step` each use (0: an authenticator that keeps no counter). */
  constructor(
    readonly origin: string,
    private readonly step = 1,
  ) {}

  /** navigator.credentials.create(): a new key pair, answered as a RegistrationResponseJSON. */
  create(options: CreationOptions, over: { origin?: string; rpId?: string; type?: string } = {}) {
    const rpId = over.rpId ?? options.rp.id ?? new URL(this.origin).hostname;
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const jwk = publicKey.export({ format: 'jwk' });
    const cose = cbor(
      new Map<number, Cbor>([
        [1, 2], // kty: EC2
        [3, -7], // alg: ES256
        [-1, 1], // crv: P-256
        [-2, Buffer.from(String(jwk.x), 'base64url')],
        [-3, Buffer.from(String(jwk.y), 'base64url')],
      ]),
    );
    const credId = randomBytes(16);
    const len = Buffer.alloc(2);
    len.writeUInt16BE(credId.length);
    const attested = Buffer.concat([Buffer.alloc(16), len, credId, cose]);
    const cred: SoftCredential = {
      id: b64u(credId),
      rpId,
      userHandle: options.user.id,
      privateKey,
      counter: 0,
    };
    this.credentials.push(cred);
    const clientDataJSON = JSON.stringify({
      type: over.type ?? 'webauthn.create',
      challenge: options.challenge,
      origin: over.origin ?? this.origin,
      crossOrigin: false,
    });
    const attestationObject = cbor(
      new Map<string, Cbor>([
        ['fmt', 'none'],
        ['attStmt', new Map()],
        ['authData', authData(rpId, UP | UV | AT, cred.counter, attested)],
      ]),
    );
    return {
      id: cred.id,
      rawId: cred.id,
      type: 'public-key',
      response: {
        clientDataJSON: b64u(clientDataJSON),
        attestationObject: b64u(attestationObject),
        transports: ['internal'],
      },
      clientExtensionResults: {},
      authenticatorAttachment: 'platform',
    };
  }

  /**
   * navigator.credentials.get(): signs the challenge with a credential (the last created unless
   * `credential` says), answered as an AuthenticationResponseJSON.
   */
  get(
    options: RequestOptions,
    over: {
      credential?: SoftCredential;
      origin?: string;
      rpId?: string;
      counter?: number;
      userHandle?: string;
    } = {},
  ) {
    const cred = over.credential ?? this.credentials.at(-1);
    if (!cred) throw new Error('this authenticator holds no credential');
    cred.counter = over.counter ?? cred.counter + this.step;
    const data = authData(over.rpId ?? cred.rpId, UP | UV, cred.counter);
    const clientDataJSON = JSON.stringify({
      type: 'webauthn.get',
      challenge: options.challenge,
      origin: over.origin ?? this.origin,
      crossOrigin: false,
    });
    const signature = sign('sha256', Buffer.concat([data, sha256(clientDataJSON)]), cred.privateKey);
    return {
      id: cred.id,
      rawId: cred.id,
      type: 'public-key',
      response: {
        clientDataJSON: b64u(clientDataJSON),
        authenticatorData: b64u(data),
        signature: b64u(signature),
        userHandle: over.userHandle ?? cred.userHandle,
      },
      clientExtensionResults: {},
      authenticatorAttachment: 'platform',
    };
  }
}
