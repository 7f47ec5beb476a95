import { hmacHex, safeEqual } from '../util/crypto';
import { ApiError } from '../http/errors';

/**
 * Check `X-PSP-Signature: sha256=<hex>` over exactly the bytes of the body received: an empty body signs the empty
 * string. A GET never carries a body here (the server refuses one before this check).
 */
export function verifyRequestSignature(header: string | undefined, rawBody: Buffer, signingSecret: string): void {
  if (header === undefined || header === '') {
    throw new ApiError(401, 'signature_required', 'Cannot accept the request: this shop requires an X-PSP-Signature header');
  }
  const m = /^sha256=([0-9a-fA-F]{64})$/.exec(header.trim());
  const expected = hmacHex(signingSecret, rawBody);
  if (!m || !safeEqual(m[1].toLowerCase(), expected)) {
    throw new ApiError(401, 'invalid_signature', 'Cannot accept the request: X-PSP-Signature does not match the body');
  }
}
