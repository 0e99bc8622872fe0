'use strict';

const test = require('node:test');
const assert = require('node:assert');
const { table } = require('..');

test('counts are right-aligned', () => {
  assert.strictEqual(table([['a', 1], ['b', 100]]), 'a   1\nb 100');
});
