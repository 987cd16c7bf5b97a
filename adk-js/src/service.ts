/**
 * `FactledgerMemoryService`: factledger as an ADK JS memory service, over `factledger mcp --http`.
 *
 * No new server surface: the service is an MCP client (the official TypeScript SDK) with a
 * bearer token, and the token fixes which app, users and clearance the caller has, as it does
 * for every MCP client (docs/mcp.md).  An app or user the token does not cover is refused by the
 * server and thrown here as `FactledgerScopeError`, never answered with an empty list.
 *
 * One MCP session is opened on first use and kept; `close()` ends it.
 */

import type {BaseMemoryService, SearchMemoryRequest, SearchMemoryResponse, Session} from '@google/adk';
import {Client} from '@modelcontextprotocol/sdk/client/index.js';
import {StreamableHTTPClientTransport} from '@modelcontextprotocol/sdk/client/streamableHttp.js';

import {type FactledgerMemoryEntry, type FactRow, memoryEntries, type ServedFact, withheldEntry} from './entries.js';
import {FactledgerConnectionError, FactledgerError, toolError} from './errors.js';
import {wireSession} from './session.js';

export interface FactledgerMemoryServiceOptions {
  /** The server's streamable HTTP endpoint, e.g. `http://127.0.0.1:8765/mcp`. */
  url: string | URL;
  /** A token made by `factledger mcp --new-token` (sent as `Authorization: Bearer ...`). */
  token: string;
  /** At most this many facts per search (the server's recall default when unset). */
  limit?: number;
  /**
   * When a query matches no fact, serve the partition's best facts instead (recall with an
   * empty query), as the Python service's `preload=True` does: for PreloadMemoryTool, which
   * sends the raw user message.  Off by default: a query that matches nothing returns nothing,
   * as ADK JS's contract has it.
   */
  preload?: boolean;
  /** The MCP client name the server sees. */
  clientName?: string;
}

/** `searchMemory`'s answer: the entries, and how many facts the caller's clearance kept back. */
export interface FactledgerSearchResponse extends SearchMemoryResponse {
  memories: FactledgerMemoryEntry[];
  withheld: number;
}

/** What `ingest_session` answered: `status` is `ingested` or `unchanged` (nothing new). */
export interface IngestAnswer {
  session: string;
  app: string;
  user: string;
  status: string;
  events_read: number;
  candidates: number;
  counts: Record<string, number>;
  watermark: string | null;
  [field: string]: unknown;
}

export interface FactsAnswer {
  app: string;
  user: string;
  facts: FactRow[];
  withheld: number;
  notice: string | null;
}

export interface PartitionRequest {
  /** Defaults to the token's app. */
  appName?: string;
  /** Defaults to the token's user (a token for several users must name one). */
  userId?: string;
}

export interface FactsRequest extends PartitionRequest {
  predicate?: string;
  /** What was true at this time (ISO 8601). */
  validAt?: string;
  /** What the ledger believed at this time (ISO 8601). */
  asOf?: string;
}

/** What to forget: exactly one of `sessionId`, `factId`, `predicate` or `all`. */
export interface ForgetRequest extends PartitionRequest {
  reason: string;
  sessionId?: string;
  factId?: string;
  predicate?: string;
  all?: boolean;
  /** An external reference recorded in the receipt. */
  ticket?: string;
}

export interface ForgetAnswer {
  committed: boolean;
  /** Without a code: what would be scrubbed (nothing was changed). */
  plan: Record<string, unknown> | null;
  /** The one-time code that commits exactly this request (reviewer tokens only; else null). */
  confirm: string | null;
  /** With a code: the erasure receipt. */
  receipt: Record<string, unknown> | null;
  note: string;
}

interface ToolAnswer {
  content?: Array<{type: string; text?: string}>;
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
}

function defined(args: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(args).filter(([, value]) => value !== undefined && value !== null));
}

function textOf(answer: ToolAnswer): string {
  return (answer.content ?? []).map((part) => (part.type === 'text' ? part.text ?? '' : '')).join('\n');
}

export class FactledgerMemoryService implements BaseMemoryService {
  private readonly url: URL;
  private readonly token: string;
  private readonly limit: number | undefined;
  private readonly preload: boolean;
  private readonly clientName: string;
  private client: Promise<Client> | null = null;

  constructor(options: FactledgerMemoryServiceOptions) {
    if (!options || !options.url || !options.token) {
      throw new FactledgerError('Error: FactledgerMemoryService needs {url, token}', 'connect');
    }
    this.url = new URL(options.url);
    this.token = options.token;
    this.limit = options.limit;
    this.preload = options.preload ?? false;
    this.clientName = options.clientName ?? 'factledger-adk';
  }

  // --- BaseMemoryService ------------------------------------------------------------------

  /**
   * Sends the session's events to `ingest_session`; what is past the session's watermark is
   * read and its facts stored.  Adding the same session again reads nothing again.
   */
  async addSessionToMemory(session: Session): Promise<void> {
    await this.ingestSession(session);
  }

  /**
   * The facts recall serves for the query (an empty query: the partition's best facts, as
   * before a model call; see `preload`), each an entry, plus an entry saying how many were
   * withheld.
   */
  async searchMemory(request: SearchMemoryRequest): Promise<FactledgerSearchResponse> {
    const recall = (query: string) => this.call('recall', {query, limit: this.limit, app: request.appName,
                                                           user: request.userId});
    let recalled = await recall(request.query ?? '');
    if (this.preload && (request.query ?? '').trim() && !(recalled.facts as unknown[] | undefined)?.length) {
      recalled = await recall('');
    }
    const facts = (recalled.facts ?? []) as ServedFact[];
    const block = String(recalled.text ?? '');
    const withheld = Number(recalled.withheld ?? 0);
    const rows = facts.length ? await this.provenance(facts, request) : new Map<string, FactRow>();
    const memories = memoryEntries(facts, block, rows);
    const kept = withheldEntry(withheld, block);
    if (kept) {
      memories.push(kept);
    }
    return {memories, withheld};
  }

  // --- beyond the interface ------------------------------------------------------------------

  /** `addSessionToMemory`, with the server's answer (status, counts, watermark). */
  async ingestSession(session: Session): Promise<IngestAnswer> {
    const wire = wireSession(session);
    return (await this.call('ingest_session', {session: wire, app: wire.appName, user: wire.userId})) as IngestAnswer;
  }

  /** The partition's open facts (or as they were at `validAt` / `asOf`), cleared and masked. */
  async facts(request: FactsRequest = {}): Promise<FactsAnswer> {
    return (await this.call('facts', {
      predicate: request.predicate,
      valid_at: request.validAt,
      as_of: request.asOf,
      app: request.appName,
      user: request.userId,
    })) as unknown as FactsAnswer;
  }

  /**
   * Plans an erasure (nothing changes) and returns the plan with a one-time confirmation code
   * (a reviewer token's; an agent token gets none); called again with the same request and
   * `confirm`, it erases for good and returns the receipt.
   */
  async forget(request: ForgetRequest, confirm?: string): Promise<ForgetAnswer> {
    return (await this.call('forget', {
      reason: request.reason,
      session: request.sessionId,
      fact_id: request.factId,
      predicate: request.predicate,
      all: request.all || undefined,
      ticket: request.ticket,
      confirm,
      app: request.appName,
      user: request.userId,
    })) as unknown as ForgetAnswer;
  }

  /** Plan and commit in one go, for an operator's script holding a reviewer token. */
  async forgetNow(request: ForgetRequest): Promise<ForgetAnswer> {
    const planned = await this.forget(request);
    if (!planned.confirm) {
      throw new FactledgerError(`Error: ${planned.note}`, 'forget');
    }
    return this.forget(request, planned.confirm);
  }

  async close(): Promise<void> {
    const client = this.client;
    this.client = null;
    if (client) {
      await (await client.catch(() => null))?.close();
    }
  }

  // --- the MCP session -------------------------------------------------------------------------

  /** Basis, quote, author and session of the served facts: the `facts` rows (masked as recall
   * masks), and for an app-wide fact (not among the user's rows) its `why` report. */
  private async provenance(facts: ServedFact[], request: SearchMemoryRequest): Promise<Map<string, FactRow>> {
    const answer = (await this.call('facts', {app: request.appName, user: request.userId})) as unknown as FactsAnswer;
    const rows = new Map<string, FactRow>((answer.facts ?? []).map((row) => [row.fact_id, row]));
    for (const fact of facts) {
      if (!rows.has(fact.fact_id)) {
        const report = await this.call('why', {fact_id: fact.fact_id}).catch(() => null);
        const row = report?.fact as FactRow | undefined;
        if (row) {
          rows.set(fact.fact_id, row);
        }
      }
    }
    return rows;
  }

  private dropSession(client: Client): void {
    this.client = null;
    client.close().catch(() => undefined);
  }

  private connect(): Promise<Client> {
    if (!this.client) {
      const transport = new StreamableHTTPClientTransport(this.url, {
        requestInit: {headers: {Authorization: `Bearer ${this.token}`}},
      });
      const client = new Client({name: this.clientName, version: '0.1.0'});
      this.client = client.connect(transport).then(
        () => client,
        (cause: unknown) => {
          this.client = null;
          throw new FactledgerConnectionError(
            `Error: could not open an MCP session at ${this.url.href}: ${cause instanceof Error ? cause.message : String(cause)}`,
            {cause});
        });
    }
    return this.client;
  }

  private async call(tool: string, args: Record<string, unknown>): Promise<Record<string, unknown>> {
    const client = await this.connect();
    let answer: ToolAnswer;
    try {
      answer = (await client.callTool({name: tool, arguments: defined(args)})) as ToolAnswer;
    } catch (cause) {
      this.dropSession(client);          // the next call opens a new MCP session
      throw new FactledgerError(
        `Error: the ${tool} call failed: ${cause instanceof Error ? cause.message : String(cause)}`, tool, {cause});
    }
    if (answer.isError) {
      throw toolError(tool, textOf(answer));
    }
    if (answer.structuredContent) {
      return answer.structuredContent;
    }
    try {
      return JSON.parse(textOf(answer)) as Record<string, unknown>;
    } catch {
      throw new FactledgerError(`Error: the ${tool} tool answered no structured content`, tool);
    }
  }
}
