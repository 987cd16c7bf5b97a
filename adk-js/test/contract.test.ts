/**
 * ADK JS's own memory-service contract (google/adk-js, core/test/memory/
 * in_memory_memory_service_test.ts), point by point, adapted to a fact memory: what is stored is
 * the facts the user stated, and what a search returns is recall's served lines for them.
 * docs/adk.md lists the points that cannot apply as written, and why.
 */

import assert from 'node:assert/strict';
import {after, describe, it} from 'node:test';

import {FactledgerScopeError} from '../src/index.js';
import {adkSession, APP, closeAll, OTHER_APP, service, textOf, who} from './helpers.js';

const memory = service('agent');
after(closeAll);

async function search(userId: string, query: string, appName = APP) {
  return memory.searchMemory({appName, userId, query});
}

describe('addSessionToMemory', () => {
  it('stores what a user turn states: the search serves it as a fact line', async () => {
    const alice = who('alice');
    await memory.addSessionToMemory(await adkSession(APP, alice, [{author: 'user', text: 'I live in Lisbon.'}]));
    const {memories} = await search(alice, 'where do I live');
    assert.equal(memories.length, 1);
    assert.match(textOf(memories[0]), /home_city = Lisbon \(stated \d{4}-\d\d-\d\d\)$/);
    assert.equal(memories[0].content.role, 'user');
  });

  it('stores nothing from events without content parts', async () => {
    const alice = who('alice');
    await memory.addSessionToMemory(await adkSession(APP, alice, [{author: 'user'}, {author: 'user', text: ''}]));
    assert.deepEqual((await search(alice, 'hello')).memories, []);
  });

  it("stores under the session's own appName and userId", async () => {
    const [alice, bob] = [who('alice'), who('bob')];
    await memory.addSessionToMemory(await adkSession(APP, alice, [{author: 'user', text: 'I live in Porto.'}]));
    await memory.addSessionToMemory(await adkSession(APP, bob, []));
    assert.equal((await search(alice, 'where do I live')).memories.length, 1);
    assert.deepEqual((await search(bob, 'where do I live')).memories, []);
  });

  it('reads a session added twice once: the watermark makes it idempotent', async () => {
    const alice = who('alice');
    const session = await adkSession(APP, alice, [{author: 'user', text: 'I live in Madrid.'}]);
    const first = await memory.ingestSession(session);
    await memory.addSessionToMemory(session);
    const again = await memory.ingestSession(session);
    assert.equal(first.status, 'ingested');
    assert.equal(again.status, 'unchanged');
    assert.equal((await memory.facts({appName: APP, userId: alice})).facts.length, 1);
    assert.equal((await search(alice, 'where do I live')).memories.length, 1);
  });

  it('keeps model and tool turns as such: neither is taken for the user\'s statement', async () => {
    const alice = who('alice');
    await memory.addSessionToMemory(await adkSession(APP, alice, [
      {author: 'helper_agent', text: 'I live in Oslo.'},
      {author: 'helper_agent', text: 'I live in Bergen.', functionResponse: true},
    ]));
    assert.deepEqual((await search(alice, 'where do I live')).memories, []);
  });
});

describe('searchMemory', () => {
  it('returns no memories for a user with no session added', async () => {
    assert.deepEqual(await search(who('unknown'), 'hello'), {memories: [], withheld: 0});
  });

  it('returns nothing when the query matches no fact', async () => {
    const alice = who('alice');
    await memory.addSessionToMemory(await adkSession(APP, alice, [{author: 'user', text: 'I live in Lyon.'}]));
    assert.deepEqual((await search(alice, 'goodbye')).memories, []);
  });

  it('serves the best facts for an unmatched query only with preload (for PreloadMemoryTool)', async () => {
    const alice = who('alice');
    await memory.addSessionToMemory(await adkSession(APP, alice, [{author: 'user', text: 'I am vegan.'}]));
    assert.deepEqual((await search(alice, 'what should I cook tonight?')).memories, []);
    const preloading = service('agent', {preload: true});
    const {memories} = await preloading.searchMemory({appName: APP, userId: alice, query: 'what should I cook tonight?'});
    assert.deepEqual(memories.map((m) => (m.customMetadata as {value: string}).value), ['vegan']);
  });

  it('matches case-insensitively', async () => {
    const alice = who('alice');
    await memory.addSessionToMemory(await adkSession(APP, alice, [{author: 'user', text: 'I live in Nantes.'}]));
    assert.equal((await search(alice, 'WHERE do I LIVE')).memories.length, 1);
  });

  it('matches any word of a multi-word query', async () => {
    const alice = who('alice');
    await memory.addSessionToMemory(await adkSession(APP, alice, [{author: 'user', text: 'I live in Turin.'}]));
    assert.equal((await search(alice, 'irrelevant live')).memories.length, 1);
  });

  it('serves the best facts for an empty query (as before a model call)', async () => {
    const alice = who('alice');
    await memory.addSessionToMemory(await adkSession(APP, alice, [
      {author: 'user', text: 'I live in Genoa.'}, {author: 'user', text: 'I am vegetarian.'}]));
    const values = (await search(alice, '')).memories.map((m) => (m.customMetadata as {value: string}).value);
    assert.deepEqual(values.sort(), ['Genoa', 'vegetarian']);
  });

  it("does not return another user's memories", async () => {
    const [alice, bob] = [who('alice'), who('bob')];
    await memory.addSessionToMemory(await adkSession(APP, alice, [{author: 'user', text: 'I live in Milan.'}]));
    assert.deepEqual((await search(bob, 'where do I live')).memories, []);
  });

  it("does not return another app's memories; an app the token does not cover is an error", async () => {
    const alice = who('alice');
    await memory.addSessionToMemory(await adkSession(APP, alice, [{author: 'user', text: 'I live in Rome.'}]));
    assert.deepEqual((await service('other_app').searchMemory({appName: OTHER_APP, userId: alice, query: 'where do I live'})).memories, []);
    await assert.rejects(search(alice, 'where do I live', OTHER_APP), (error: unknown) => {
      assert.ok(error instanceof FactledgerScopeError);
      assert.match(error.message, /^Error: .*outside this caller's scope/);
      return true;
    });
  });

  it('gives each entry its author and the ISO date it was said', async () => {
    const alice = who('alice');
    const session = await adkSession(APP, alice, [{author: 'user', text: 'I live in Pisa.', daysAgo: 3}]);
    await memory.addSessionToMemory(session);
    const [entry] = (await search(alice, 'where do I live')).memories;
    assert.equal(entry.author, 'user');
    assert.equal(entry.timestamp, new Date(session.events[0].timestamp).toISOString());
  });
});
