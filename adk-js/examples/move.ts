/**
 * Two ADK JS sessions for one user, a move from Pune to Bengaluru, then "where do I live?".
 *
 *   node dist/examples/move.js URL TOKEN [OTHER_TOKEN]
 *
 * TOKEN covers app `homes`, user `asha` (`factledger mcp --new-token --app homes --user asha`);
 * OTHER_TOKEN, if given, is another user's, who must not see Asha's memory.  Prints one JSON line.
 */

import {createEvent, InMemorySessionService} from '@google/adk';

import {FactledgerError, FactledgerMemoryService} from '../src/index.js';

const [url, token, otherToken] = process.argv.slice(2);
const DAY = 86_400_000;
const sessions = new InMemorySessionService();
const memory = new FactledgerMemoryService({url, token});

async function said(text: string, daysAgo: number) {
  const session = await sessions.createSession({appName: 'homes', userId: 'asha'});
  for (const [author, words] of [['user', text], ['concierge', 'Noted.']]) {
    await sessions.appendEvent({session, event: createEvent({
      invocationId: session.id, author, timestamp: Date.now() - daysAgo * DAY,
      content: {role: author === 'user' ? 'user' : 'model', parts: [{text: words}]},
    })});
  }
  await memory.addSessionToMemory(session);
}

await said('I live in Pune.', 30);
await said('I moved to Bengaluru.', 2);
const found = await memory.searchMemory({appName: 'homes', userId: 'asha', query: 'where do I live'});
let other: unknown = null;
if (otherToken) {
  const stranger = new FactledgerMemoryService({url, token: otherToken});
  try {
    await stranger.searchMemory({appName: 'homes', userId: 'asha', query: 'where do I live'});
    other = 'served';
  } catch (error) {
    other = error instanceof FactledgerError ? error.message : String(error);
  }
  await stranger.close();
}
await memory.close();
console.log(JSON.stringify({
  memories: found.memories.map((m) => ({text: m.content.parts?.[0]?.text, timestamp: m.timestamp,
                                         metadata: m.customMetadata})),
  other,
}));
