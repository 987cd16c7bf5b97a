/**
 * The service inside an ADK JS Runner, with ADK's own memory tools: PreloadMemoryTool puts the
 * served facts into the system instruction before the model call, and LoadMemoryTool answers
 * the model's load_memory call.  The model is a scripted `BaseLlm` that records what it was
 * sent (no model is called over the network); the memory is the live server's.
 */

import assert from 'node:assert/strict';
import {after, describe, it} from 'node:test';

import {BaseLlm, type BaseLlmConnection, InMemorySessionService, type LlmRequest, type LlmResponse, LlmAgent,
        LoadMemoryTool, PreloadMemoryTool, Runner} from '@google/adk';

import {adkSession, APP, closeAll, service, who} from './helpers.js';

/** Answers from a script, recording each request it was sent. */
class ScriptedLlm extends BaseLlm {
  readonly requests: LlmRequest[] = [];

  constructor(private readonly script: LlmResponse[]) {
    super({model: 'scripted'});
  }

  async *generateContentAsync(request: LlmRequest): AsyncGenerator<LlmResponse, void> {
    this.requests.push(structuredClone({contents: request.contents, config: {systemInstruction: request.config?.systemInstruction}}) as LlmRequest);
    yield this.script.shift() ?? {content: {role: 'model', parts: [{text: 'done'}]}};
  }

  async connect(): Promise<BaseLlmConnection> {
    throw new Error('no live connection in a scripted model');
  }
}

const memory = service('agent');
after(closeAll);

async function moved(user: string) {
  await memory.addSessionToMemory(await adkSession(APP, user, [{author: 'user', text: 'I live in Pune.', daysAgo: 20}]));
  await memory.addSessionToMemory(await adkSession(APP, user, [{author: 'user', text: 'I moved to Bengaluru.', daysAgo: 3}]));
}

async function ask(model: ScriptedLlm, tool: PreloadMemoryTool | LoadMemoryTool, user: string, text: string) {
  const agent = new LlmAgent({name: 'concierge', model, instruction: 'Answer from memory.', tools: [tool]});
  const sessionService = new InMemorySessionService();
  const runner = new Runner({appName: APP, agent, sessionService, memoryService: memory});
  const session = await sessionService.createSession({appName: APP, userId: user});
  const said: string[] = [];
  for await (const event of runner.runAsync({userId: user, sessionId: session.id,
                                             newMessage: {role: 'user', parts: [{text}]}})) {
    said.push(...(event.content?.parts ?? []).map((p) => p.text ?? '').filter(Boolean));
  }
  return said;
}

describe('inside a Runner', () => {
  it('PreloadMemoryTool gives the model the current fact, dated, before it answers', async () => {
    const user = who('asha');
    await moved(user);
    const model = new ScriptedLlm([{content: {role: 'model', parts: [{text: 'You live in Bengaluru.'}]}}]);
    assert.deepEqual(await ask(model, new PreloadMemoryTool(), user, 'where do I live?'), ['You live in Bengaluru.']);
    const instruction = JSON.stringify(model.requests[0].config?.systemInstruction);
    assert.match(instruction, /home_city = Bengaluru \(stated \d{4}-\d\d-\d\d\)/);
    assert.match(instruction, /Time: \d{4}-\d\d-\d\dT/);
    assert.doesNotMatch(instruction, /Pune/);
  });

  it("LoadMemoryTool answers the model's load_memory call with the served fact", async () => {
    const user = who('asha');
    await moved(user);
    const model = new ScriptedLlm([
      {content: {role: 'model', parts: [{functionCall: {id: 'call-1', name: 'load_memory', args: {query: 'where do I live'}}}]}},
      {content: {role: 'model', parts: [{text: 'Bengaluru.'}]}},
    ]);
    assert.deepEqual(await ask(model, new LoadMemoryTool(), user, 'where do I live?'), ['Bengaluru.']);
    const answer = JSON.stringify(model.requests[1].contents.at(-1));
    assert.match(answer, /home_city = Bengaluru/);
    assert.doesNotMatch(answer, /Pune/);
  });
});
