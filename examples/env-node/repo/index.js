'use strict';

const { padStart } = require('akira-example-pad');

// table formats rows of [name, count] with the counts right-aligned.
function table(rows) {
  const width = Math.max(0, ...rows.map(([, n]) => String(n).length));
  return rows.map(([name, n]) => `${name} ${padStart(n, width)}`).join('\n');
}

module.exports = { table };
