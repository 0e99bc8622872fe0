#!/bin/sh
# THIS IS NOT A REAL CODING AGENT: the scripted stand-in of the env-node example's test. It does task
# 1.1 of repo/ROADMAP.md and runs the project's tests itself, as an agent would, with no network (its
# profile says network: none): they pass only with what setup installed.
set -eu
echo "env-node agent: task $AKIRA_TASK_ID: $AKIRA_TASK_TITLE"
case "$AKIRA_TASK_ID" in
1.1)
  cat > index.js <<'JS'
'use strict';

const { padStart, padEnd } = require('akira-example-pad');

// table formats rows of [name, count] with the counts right-aligned.
function table(rows) {
  const width = Math.max(0, ...rows.map(([, n]) => String(n).length));
  return rows.map(([name, n]) => `${name} ${padStart(n, width)}`).join('\n');
}

// header centres title on a line of width characters.
function header(title, width) {
  const left = Math.floor((width - title.length) / 2);
  return padEnd(padStart(title, title.length + Math.max(0, left)), width);
}

module.exports = { table, header };
JS
  cat > test/header.test.js <<'JS'
'use strict';

const test = require('node:test');
const assert = require('node:assert');
const { header } = require('..');

test('the title is centred', () => {
  assert.strictEqual(header('ab', 6), '  ab  ');
  assert.strictEqual(header('abc', 6), ' abc  ');
});
JS
  npm test
  ;;
*)
  echo "env-node agent: no scripted answer for task $AKIRA_TASK_ID" >&2
  exit 1
  ;;
esac
