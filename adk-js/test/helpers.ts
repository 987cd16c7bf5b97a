/**
 * What every test file shares: the server and tokens the Python harness started and made
 * (tests/adk/test_adk_js.py passes them in FACTLEDGER_MCP_URL and FACTLEDGER_TOKENS), and ADK
 * JS sessions built with ADK's own session service, so the events are the ones a Runner makes.
 *
 * The test files run in parallel on one ledger: each names users of its own (`who`).
 */

import {randomUUID} from 'node:crypto';

import {createEvent, InMemorySessionService, type Session} from '@google/adk';

import {FactledgerMemoryService} from '../src/index.js';

export const URL = process.env.FACTLEDGER_MCP_URL ?? '';
const TOKENS: Record<string, string> = JSON.parse(process.env.FACTLEDGER_TOKENS ?? '{}');

if (!URL || !Object.keys(TOKENS).length) {
  throw new Error('run these tests through tests/adk/test_adk_js.py (FACTLEDGER_MCP_URL, FACTLEDGER_TOKENS)');
}

export const APP = 'contract';          // the app of the `agent`, `health` and `reviewer` tokens
export const OTHER_APP = 'otherapp';    // the app of the `other_app` token

const opened: FactledgerMemoryService[] = [];

/** A service on the named token (see the harness for what each covers). */
export function service(token: string, options: {preload?: boolean} = {}): FactledgerMemoryService {
  const value = TOKENS[token];
  if (!value) {
    throw new Error(`no token ${token}`);
  }
  const made = new FactledgerMemoryService({url: URL, token: value, ...options});
  opened.push(made);
  return made;
}

export async function closeAll(): Promise<void> {
  await Promise.all(opened.splice(0).map((s) => s.close()));
}

/** A user id no other test uses. */
export function who(name: string): string {
  return `${name}-${randomUUID().slice(0, 8)}`;
}

const DAY = 86_400_000;

export interface Turn {
  author: string;                       // 'user', or an agent's name
  text?: string;
  daysAgo?: number;                     // when it was said (default: 1 day ago)
  functionResponse?: boolean;           // a tool's answer
}

/** An ADK JS session with these turns, made by ADK's InMemorySessionService. */
export async function adkSession(appName: string, userId: string, turns: Turn[], id?: string): Promise<Session> {
  const sessions = new InMemorySessionService();
  const session = await sessions.createSession({appName, userId, sessionId: id});
  for (const [index, turn] of turns.entries()) {
    const parts = turn.functionResponse
      ? [{functionResponse: {name: 'lookup', response: {result: turn.text ?? ''}}}]
      : turn.text === undefined ? [] : [{text: turn.text}];
    const event = createEvent({
      invocationId: `inv-${index}`,
      author: turn.author,
      content: parts.length ? {role: turn.author === 'user' ? 'user' : 'model', parts} : undefined,
      timestamp: Date.now() - (turn.daysAgo ?? 1) * DAY + index * 1000,
    });
    await sessions.appendEvent({session, event});
  }
  return session;
}

/** The text of an entry's content. */
export function textOf(entry: {content: {parts?: Array<{text?: string}>}}): string {
  return (entry.content.parts ?? []).map((p) => p.text ?? '').join(' ');
}
