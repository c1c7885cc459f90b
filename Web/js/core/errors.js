// Errors of the PeopleKeeper core (port of Sources/PeopleCore/Wire/ErrorCode.swift).

/** The stable error codes of PROTOCOL.md. Clients switch on these. */
export const ErrorCode = Object.freeze({
  badJSON: 'bad-json',
  badMessage: 'bad-message',
  unsupportedProtocol: 'unsupported-protocol',
  notHello: 'not-hello',
  unauthorized: 'unauthorized',
  forbidden: 'forbidden',
  invalidOp: 'invalid-op',
  staleBase: 'stale-base',
  tooLarge: 'too-large',
  rateLimited: 'rate-limited',
  roomFull: 'room-full',
  serverError: 'server-error',
  /** `undo` with an `entry` that is not on the user's undo stack (HISTORY §2). */
  noEntry: 'no-entry',
});

const codes = new Set(Object.values(ErrorCode));

/** Whether `code` is one of PROTOCOL.md's error codes. */
export function isErrorCode(code) { return codes.has(code); }

/** Codes sent with `fatal: true`, after which the hub closes the connection. */
export function isFatal(code) {
  return code === ErrorCode.unsupportedProtocol || code === ErrorCode.unauthorized;
}

/** A typed protocol error: a code a client can switch on plus a human message. */
export class ProtocolError extends Error {
  constructor(code, message) {
    super(`${code}: ${message}`);
    this.name = 'ProtocolError';
    this.code = code;
    this.reason = message;
  }

  /** The human message without the code (the wire's `message`). */
  get text() { return this.reason; }
}

/** A diff or batch that would break the model; nothing of its batch is applied. */
export class InvalidOp extends ProtocolError {
  constructor(reason) {
    super(ErrorCode.invalidOp, reason);
    this.name = 'InvalidOp';
  }
}

/** A ProtocolError with `code`, an InvalidOp when the code is `invalid-op`. */
export function protocolError(code, message) {
  return code === ErrorCode.invalidOp ? new InvalidOp(message) : new ProtocolError(code, message);
}
