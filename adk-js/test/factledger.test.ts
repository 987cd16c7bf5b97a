/**
 * What a fact memory adds to ADK JS's contract: a newer statement supersedes an older one across
 * sessions, health facts stay withheld at the default clearance, a forgotten session is gone
 * from search, the operator's helpers (facts, forget with its confirmation code), and errors
 * that carry the server's `Error: ...` text.
 */

import assert from 'node:assert/strict';
import {after, describe, it} from 'node:test';

import {FactledgerConnectionError, FactledgerError, FactledgerMemoryService, FactledgerScopeError,
        type FactMetadata, WITHHELD_ID} from '../src/index.js';
import {adkSession, APP, closeAll, service, textOf, URL, who} from './helpers.js';

const memory = service('agent');
after(closeAll);

describe('facts over sessions', () => {
  it('serves the newer statement of a later session, and only that', async () => {
    const user = who('mover');
    await memory.addSessionToMemory(await adkSession(APP, user, [{author: 'user', text: 'I live in Pune.', daysAgo: 9}]));
    const later = await adkSession(APP, user, [{author: 'user', text: 'I moved to Bengaluru.', daysAgo: 2}]);
    await memory.addSessionToMemory(later);
    const {memories} = await memory.searchMemory({appName: APP, userId: user, query: 'where do I live'});
    assert.equal(memories.length, 1);
    const meta = memories[0].customMetadata as FactMetadata;
    assert.equal(meta.value, 'Bengaluru');
    assert.equal(meta.predicate, 'home_city');
    assert.equal(meta.basis, 'stated');
    assert.equal(meta.quote, 'I moved to Bengaluru.');
    assert.equal(meta.session, later.id);
    assert.equal(memories[0].id, meta.factId);
    assert.equal(memories[0].timestamp, new Date(later.events[0].timestamp).toISOString());
    assert.doesNotMatch(JSON.stringify(memories), /Pune/);
    const open = await memory.facts({appName: APP, userId: user, predicate: 'home_city'});
    assert.deepEqual(open.facts.map((f) => f.value), ['Bengaluru']);
  });

  it('withholds health facts at the default clearance, and says how many', async () => {
    const user = who('patient');
    await memory.addSessionToMemory(await adkSession(APP, user, [
      {author: 'user', text: 'I live in Goa and I have diabetes.'}]));
    const found = await memory.searchMemory({appName: APP, userId: user, query: ''});
    assert.equal(found.withheld, 1);
    assert.doesNotMatch(JSON.stringify(found), /diabetes/);
    const home = found.memories.find((m) => m.id !== WITHHELD_ID);
    assert.match(String((home?.customMetadata as FactMetadata).quote), /^I live in Goa and I have \S+\.$/);
    const kept = found.memories.find((m) => m.id === WITHHELD_ID);
    assert.ok(kept, 'an entry says facts were withheld');
    assert.match(textOf(kept), /^Withheld: 1 stored fact/);
    assert.deepEqual(kept.customMetadata, {factId: null, withheld: 1});
    const cleared = await service('health').searchMemory({appName: APP, userId: user, query: ''});
    assert.equal(cleared.withheld, 0);
    assert.match(JSON.stringify(cleared.memories), /condition = diabetes/);
  });
});

describe('forgetting', () => {
  it('takes a forgotten session out of search, through the confirmation code', async () => {
    const user = who('leaver');
    const session = await adkSession(APP, user, [{author: 'user', text: 'I live in Kochi.'}]);
    await memory.addSessionToMemory(session);
    const request = {appName: APP, userId: user, sessionId: session.id, reason: 'user asked'};
    const plan = await memory.forget(request);          // an agent token: a plan, no code
    assert.equal(plan.committed, false);
    assert.equal(plan.confirm, null);
    await assert.rejects(memory.forgetNow(request), FactledgerError);
    assert.equal((await memory.searchMemory({appName: APP, userId: user, query: 'where do I live'})).memories.length, 1);
    const reviewer = service('reviewer');
    await assert.rejects(reviewer.forget(request, 'not-a-code'), {message: /^Error: the confirmation code /});
    const done = await reviewer.forgetNow(request);
    assert.equal(done.committed, true);
    assert.ok(done.receipt);
    assert.deepEqual((await memory.searchMemory({appName: APP, userId: user, query: 'where do I live'})).memories, []);
    assert.deepEqual((await memory.facts({appName: APP, userId: user})).facts, []);
    // the MCP tool refuses a forgotten session outright (the Python service skips what was erased)
    await assert.rejects(memory.addSessionToMemory(session), {message: /^Error: .*forgotten/});
    assert.deepEqual((await memory.searchMemory({appName: APP, userId: user, query: 'where do I live'})).memories, []);
  });
});

describe('errors', () => {
  it('refuses a user the token does not cover: an error, not an empty answer', async () => {
    const single = service('single');          // app contract, user carol only
    await assert.rejects(single.searchMemory({appName: APP, userId: who('dave'), query: 'x'}), (error: unknown) => {
      assert.ok(error instanceof FactledgerScopeError);
      assert.equal(error.tool, 'recall');
      assert.match(error.message, /^Error: app 'contract', user 'dave-.*' is outside this caller's scope/);
      return true;
    });
    await assert.rejects(single.addSessionToMemory(await adkSession(APP, who('dave'), [])), FactledgerScopeError);
  });

  it("passes the server's refusal of a bad session on, writing nothing", async () => {
    const user = who('broken');
    const session = await adkSession(APP, user, [{author: 'user', text: 'I live in Delhi.'}]);
    (session.events[0] as {timestamp: unknown}).timestamp = 'yesterday';
    await assert.rejects(memory.addSessionToMemory(session), (error: unknown) => {
      assert.ok(error instanceof FactledgerError && !(error instanceof FactledgerScopeError));
      assert.match(error.message, /^Error: .*timestamp/);
      return true;
    });
    assert.deepEqual((await memory.facts({appName: APP, userId: user})).facts, []);
  });

  it('refuses a token the server does not hold', async () => {
    const stranger = new FactledgerMemoryService({url: URL, token: 'not-a-token'});
    await assert.rejects(stranger.searchMemory({appName: APP, userId: 'x', query: ''}), FactledgerConnectionError);
    await stranger.close();
  });
});
