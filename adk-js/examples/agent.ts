/**
 * The runnable example of docs/adk.md ("TypeScript"), kept here so that `npm run build`
 * type-checks it against ADK JS.  It calls Gemini (GEMINI_API_KEY) and a server at
 * FACTLEDGER_URL (default http://127.0.0.1:8765/mcp) with FACTLEDGER_TOKEN:
 *
 *   node dist/examples/agent.js
 *
 * The docs import 'factledger-adk'; here the package's own source.
 */

import {InMemorySessionService, LlmAgent, PreloadMemoryTool, Runner} from '@google/adk';
import {FactledgerMemoryService} from '../src/index.js';

const memory = new FactledgerMemoryService({url: process.env.FACTLEDGER_URL ?? 'http://127.0.0.1:8765/mcp',
                                            token: process.env.FACTLEDGER_TOKEN!, preload: true});
const agent = new LlmAgent({name: 'concierge', model: 'gemini-2.5-flash', instruction: 'Answer from memory.',
                            tools: [new PreloadMemoryTool()]});   // or new LoadMemoryTool() (then preload: false)
const sessionService = new InMemorySessionService();
const runner = new Runner({appName: 'homes', agent, sessionService, memoryService: memory});

const session = await sessionService.createSession({appName: 'homes', userId: 'asha'});
for await (const event of runner.runAsync({userId: 'asha', sessionId: session.id,
                                           newMessage: {role: 'user', parts: [{text: 'I moved to Bengaluru.'}]}})) {
  console.log(event.content?.parts?.[0]?.text);
}
await memory.addSessionToMemory((await sessionService.getSession({appName: 'homes', userId: 'asha',
                                                                   sessionId: session.id}))!);
console.log(await memory.searchMemory({appName: 'homes', userId: 'asha', query: 'where do I live'}));
await memory.close();
