/**
 * The parts that need no server: which block line is a fact's, the withheld entry, and an ADK JS
 * session as `ingest_session` reads it (milliseconds to seconds, tool payloads and thoughts).
 */

import assert from 'node:assert/strict';
import {describe, it} from 'node:test';

import {createEvent, type Session} from '@google/adk';

import {lineFor, type ServedFact, withheldEntry} from '../src/entries.js';
import {wireSession} from '../src/session.js';

const BLOCK = [
  '<stored_facts>',
  'Stored facts about the user ...',
  '- allergy = shellfish (stated 2026-12-01)',
  '- allergy = fish (stated 2026-12-02)',
  '- user.daughter allergy = peanuts (stated 2026-12-03)',
  '- diet: conflicting records, unresolved: vegan (stated, said by the user in session s1, 2026-12-01) vs '
    + 'vegetarian (stated, said by the user in session s2, 2026-12-02). These conflict; do not assume either is true.',
  'Withheld: 1 stored fact (1 above this caller\'s clearance). Their values are not given here; do not guess or invent them.',
  '</stored_facts>',
].join('\n');

function fact(predicate: string, value: string, subject = 'user'): ServedFact {
  return {subject, predicate, value, said_at: '2026-12-02T00:00:00.000000Z', fact_id: 'f', status: 'current'};
}

describe('lineFor', () => {
  it("finds a fact's own line: the whole value, the subject, a dispute", () => {
    assert.equal(lineFor(fact('allergy', 'fish'), BLOCK, 'stated'), 'allergy = fish (stated 2026-12-02)');
    assert.equal(lineFor(fact('allergy', 'peanuts', 'user.daughter'), BLOCK, 'stated'),
                 'user.daughter allergy = peanuts (stated 2026-12-03)');
    assert.match(lineFor(fact('diet', 'vegetarian'), BLOCK, 'stated'), /^diet: conflicting records, unresolved: vegan .* vs vegetarian/);
  });

  it('writes a line in the block\'s shape for a fact the block does not show', () => {
    assert.equal(lineFor(fact('home_city', 'Pune'), BLOCK, 'stated'), 'home_city = "Pune" (stated 2026-12-02)');
  });
});

describe('withheldEntry', () => {
  it("is the block's Withheld line, or nothing", () => {
    assert.match(JSON.stringify(withheldEntry(1, BLOCK)), /Withheld: 1 stored fact/);
    assert.equal(withheldEntry(0, '<stored_facts>\n</stored_facts>'), null);
  });
});

describe('wireSession', () => {
  it('sends seconds, tool names without payloads, thoughts marked, and a stable id for an event without one', () => {
    const at = Date.parse('2026-12-05T10:30:00.250Z');
    const session: Session = {
      id: 's1', appName: 'homes', userId: 'asha', state: {}, lastUpdateTime: at,
      events: [
        createEvent({id: 'e1', author: 'user', timestamp: at, content: {role: 'user', parts: [{text: 'I live in Pune.'}]}}),
        createEvent({id: 'e2', author: 'concierge', timestamp: at, content: {role: 'model', parts: [
          {text: 'thinking', thought: true}, {text: 'Noted.'}, {inlineData: {mimeType: 'image/png', data: 'AAAA'}}]}}),
        createEvent({id: '', author: 'concierge', timestamp: at, content: {role: 'user', parts: [
          {functionResponse: {name: 'lookup', response: {secret: 'payload'}}}]}}),
      ],
    };
    session.events[2].id = '';              // as a session restored without ids (createEvent makes one)
    const wire = wireSession(session);
    assert.deepEqual(wire.events[0], {id: 'e1', author: 'user', timestamp: at / 1000,
                                      content: {role: 'user', parts: [{text: 'I live in Pune.'}]}});
    assert.deepEqual(wire.events[1].content?.parts, [{text: 'thinking', thought: true}, {text: 'Noted.'}]);
    assert.deepEqual(wire.events[2].content?.parts, [{functionResponse: {name: 'lookup'}}]);
    assert.match(wire.events[2].id, /^adk-[0-9a-f]{32}$/);
    assert.equal(wireSession(session).events[2].id, wire.events[2].id);
    assert.doesNotMatch(JSON.stringify(wire), /payload|AAAA/);
  });
});
