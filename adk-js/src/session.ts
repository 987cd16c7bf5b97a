/**
 * An ADK JS session as the `ingest_session` tool reads it: the JSON google-adk (Python) writes,
 * which factledger's ingestion parses (ledger/ingest/formats.py, `parse_adk`).
 *
 * Two differences of ADK JS are bridged here, and nothing else is interpreted: who said a turn
 * is decided by the server's parser (author `user` is the user; a turn carrying a function
 * response is a tool's; anything else is the agent's), exactly as for a Python session.
 * - ADK JS stamps events in epoch milliseconds (`createEvent` uses `Date.now()`); the ledger
 *   reads epoch seconds, so each timestamp is divided by 1000.
 * - An event without an id gets the id google-adk's own SQLite service would give it (a hash
 *   of author, timestamp and content), as the Python memory service does, so adding the same
 *   session again is recognised by the watermark.
 * Only what ingestion reads is sent: a tool's response payload is reduced to its name (the
 * extractor never sees it; it becomes a `tool result omitted` placeholder), thoughts are marked
 * as such (never read as said), and other parts (inline data, code) are dropped.
 */

import {createHash} from 'node:crypto';

import type {Event, Session} from '@google/adk';

/** The customMetadata key that marks a turn as a document's or a tool's (formats.py). */
export const AUTHOR_METADATA_KEY = 'factledger_author';

interface WirePart {
  text?: string;
  thought?: boolean;
  functionResponse?: {name?: string};
}

interface WireEvent {
  id: string;
  author: string | undefined;
  timestamp: unknown;
  content?: {role?: string; parts: WirePart[]};
  partial?: boolean;
  customMetadata?: Record<string, unknown>;
}

export interface WireSession {
  id: string;
  appName: string;
  userId: string;
  events: WireEvent[];
}

function wireParts(event: Event): WirePart[] {
  const parts: WirePart[] = [];
  for (const part of event.content?.parts ?? []) {
    if (part.functionResponse) {
      parts.push({functionResponse: {name: part.functionResponse.name}});
    } else if (typeof part.text === 'string') {
      parts.push(part.thought ? {text: part.text, thought: true} : {text: part.text});
    }
  }
  return parts;
}

function seconds(timestamp: unknown): unknown {
  // a value that is no number goes as it is: the server names it in its refusal
  return typeof timestamp === 'number' && Number.isFinite(timestamp) ? timestamp / 1000 : timestamp;
}

function eventId(event: Event): string {
  if (typeof event.id === 'string' && event.id.trim()) {
    return event.id;
  }
  const content = event.content ? JSON.stringify(event.content) : '';
  const digest = createHash('sha256')
    .update(`${event.author ?? ''}:${event.timestamp}:${content}`)
    .digest('hex');
  return `adk-${digest.slice(0, 32)}`;
}

/** The session's events as ingestion reads them; `appName` and `userId` as the session says. */
export function wireSession(session: Session): WireSession {
  const events = (session.events ?? []).map((event): WireEvent => {
    const wire: WireEvent = {id: eventId(event), author: event.author, timestamp: seconds(event.timestamp)};
    if (event.content) {
      wire.content = {role: event.content.role, parts: wireParts(event)};
    }
    if (event.partial) {
      wire.partial = true;
    }
    const marked = event.customMetadata?.[AUTHOR_METADATA_KEY];
    if (marked !== undefined) {
      wire.customMetadata = {[AUTHOR_METADATA_KEY]: marked};
    }
    return wire;
  });
  return {id: session.id, appName: session.appName, userId: session.userId, events};
}
