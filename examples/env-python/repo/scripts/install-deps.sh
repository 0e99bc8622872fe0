#!/bin/sh
# Installs requirements.txt into .venv, offline first: from the wheelhouse in pip's cache when it
# holds every pinned wheel (no request to the index at all; pip always asks the index again
# otherwise), else after downloading them into it. --require-hashes checks each wheel against
# requirements.txt, wherever it comes from.
set -eu
wheels="${PIP_CACHE_DIR:-$HOME/.cache/pip}/wheelhouse"
python3 -m venv --without-pip .venv
install() {
  python3 -m pip --python .venv/bin/python install --require-hashes --no-index --find-links "$wheels" -r requirements.txt "$@"
}
if ! install --quiet 2>/dev/null; then
  echo "install-deps: the wheelhouse lacks a pinned wheel: downloading them"
  python3 -m pip download --require-hashes --dest "$wheels" -r requirements.txt
  install
fi
