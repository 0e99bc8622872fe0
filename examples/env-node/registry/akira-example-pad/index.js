'use strict';

// padStart pads text on the left with ch (a space by default) to width characters.
function padStart(text, width, ch = ' ') {
  text = String(text);
  while (text.length < width) text = ch + text;
  return text;
}

// padEnd pads text on the right.
function padEnd(text, width, ch = ' ') {
  text = String(text);
  while (text.length < width) text = text + ch;
  return text;
}

module.exports = { padStart, padEnd };
