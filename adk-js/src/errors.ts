/**
 * Typed errors.  The MCP server answers a refused or failed call with a tool error whose text is
 * the CLI's `Error: ...` line (nothing of the call was written); the service throws it as a
 * `FactledgerError` carrying that text unchanged, so a caller logs what an operator would see.
 */

/** A call the factledger MCP server refused or could not do; `message` is its `Error: ...` text. */
export class FactledgerError extends Error {
  /** The MCP tool that answered (`recall`, `ingest_session`, ...), or `connect`. */
  readonly tool: string;

  constructor(message: string, tool: string, options?: {cause?: unknown}) {
    super(message, options);
    this.name = 'FactledgerError';
    this.tool = tool;
  }
}

/**
 * The app or user named lies outside what the token covers: refused, nothing read or written.
 * Never an empty answer, so an app that names the wrong user learns it at once.
 */
export class FactledgerScopeError extends FactledgerError {
  constructor(message: string, tool: string) {
    super(message, tool);
    this.name = 'FactledgerScopeError';
  }
}

/** The server could not be reached, or refused the token (HTTP 401): no tool ran. */
export class FactledgerConnectionError extends FactledgerError {
  constructor(message: string, options?: {cause?: unknown}) {
    super(message, 'connect', options);
    this.name = 'FactledgerConnectionError';
  }
}

const SCOPE_MARKS = ["outside this caller's scope", 'name a user: this caller'];

/** The error for a tool's `Error: ...` text: a scope refusal, or any other. */
export function toolError(tool: string, text: string): FactledgerError {
  const message = text.startsWith('Error: ') ? text : `Error: ${text}`;
  return SCOPE_MARKS.some((mark) => message.includes(mark))
    ? new FactledgerScopeError(message, tool)
    : new FactledgerError(message, tool);
}
