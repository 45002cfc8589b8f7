/**
 * Credentials at rest: AES-256-GCM under the deployment's key (`AGENTLOOM_SECRET_KEY`, 32 random bytes as base64
 * or hex). Each sealed value has its own random 96-bit nonce, and is bound to the row it belongs to (app, user,
 * credential key) as additional authenticated data: a ciphertext copied to another user's row does not open.
 */
import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomBytes } from 'node:crypto';
import { AgentloomError } from './errors.js';

const NONCE_BYTES = 12;
const TAG_BYTES = 16;
/** The first byte of a sealed value: the format, so a later one can be told apart. */
const FORMAT = 1;

/** How to make a key, for error messages. */
export const MAKE_KEY_HINT = 'make one with `openssl rand -base64 32`';

/** Reads a key: 32 bytes written as base64 (44 characters) or hex (64 characters). */
export function parseSecretKey(text: string, source = 'AGENTLOOM_SECRET_KEY'): Buffer {
  const trimmed = text.trim();
  const key = /^[0-9a-fA-F]{64}$/.test(trimmed)
    ? Buffer.from(trimmed, 'hex')
    : Buffer.from(trimmed, 'base64');
  if (key.length !== 32 || (!/^[0-9a-fA-F]{64}$/.test(trimmed) && key.toString('base64') !== trimmed)) {
    throw new AgentloomError(
      'CONFIG',
      `${source} must be 32 random bytes as base64 or hex; ${MAKE_KEY_HINT}`,
      {
        details: { field: source },
      },
    );
  }
  return key;
}

/** Seals and opens secrets under one key (see the file's comment). */
export class SecretBox {
  private readonly key: Buffer;

  constructor(key: Buffer) {
    if (key.length !== 32) throw new AgentloomError('CONFIG', `a secret key is 32 bytes; ${MAKE_KEY_HINT}`);
    this.key = Buffer.from(key);
  }

  /**
   * An HMAC-SHA256 of `data` (base64url) under a key derived from this one for `purpose` (HKDF): unforgeable by
   * anyone without the deployment's key, and never the same for two purposes.
   */
  mac(purpose: string, data: string): string {
    const key = Buffer.from(hkdfSync('sha256', this.key, Buffer.alloc(0), `agentloom ${purpose}`, 32));
    return createHmac('sha256', key).update(data, 'utf8').digest('base64url');
  }

  /** `format | nonce | tag | ciphertext` of `plaintext`, bound to `context`. */
  seal(plaintext: string, context: string): Buffer {
    const nonce = randomBytes(NONCE_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.key, nonce);
    cipher.setAAD(Buffer.from(context, 'utf8'));
    const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return Buffer.concat([Buffer.from([FORMAT]), nonce, cipher.getAuthTag(), body]);
  }

  /** The plaintext of `sealed`; throws when it was sealed under another key or for another context. */
  open(sealed: Uint8Array, context: string): string {
    const data = Buffer.from(sealed);
    if (data.length < 1 + NONCE_BYTES + TAG_BYTES || data[0] !== FORMAT) {
      throw new AgentloomError('INTERNAL', 'a stored credential is not in a format this version reads');
    }
    const nonce = data.subarray(1, 1 + NONCE_BYTES);
    const tag = data.subarray(1 + NONCE_BYTES, 1 + NONCE_BYTES + TAG_BYTES);
    const decipher = createDecipheriv('aes-256-gcm', this.key, nonce);
    decipher.setAAD(Buffer.from(context, 'utf8'));
    decipher.setAuthTag(tag);
    try {
      return Buffer.concat([
        decipher.update(data.subarray(1 + NONCE_BYTES + TAG_BYTES)),
        decipher.final(),
      ]).toString('utf8');
    } catch {
      throw new AgentloomError(
        'CONFIG',
        'a stored credential does not open with AGENTLOOM_SECRET_KEY (the key changed, or the row was altered)',
      );
    }
  }
}
