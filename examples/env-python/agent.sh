#!/bin/sh
# THIS IS NOT A REAL CODING AGENT: the scripted stand-in of the env-python example's test. It does
# task 1.1 of repo/ROADMAP.md and runs the project's tests itself, as an agent would, with no network
# (its profile says network: none): they pass only with what setup installed.
set -eu
echo "env-python agent: task $AKIRA_TASK_ID: $AKIRA_TASK_TITLE"
case "$AKIRA_TASK_ID" in
1.1)
  cat >> greeter/__init__.py <<'PY'


def page_link(title):
    """An HTML link to the page with this title."""
    from html import escape

    return '<a href="%s">%s</a>' % (escape(page_path(title)), escape(title))
PY
  cat > tests/test_link.py <<'PY'
import unittest

from greeter import page_link


class PageLinkTest(unittest.TestCase):
    def test_link(self):
        self.assertEqual(page_link("Hello, World!"), '<a href="/pages/hello-world/">Hello, World!</a>')

    def test_title_is_escaped(self):
        self.assertEqual(page_link("A <b> & C"), '<a href="/pages/a-b-c/">A &lt;b&gt; &amp; C</a>')
PY
  .venv/bin/python -m unittest discover -s tests -t .
  ;;
*)
  echo "env-python agent: no scripted answer for task $AKIRA_TASK_ID" >&2
  exit 1
  ;;
esac
