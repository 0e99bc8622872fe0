#!/bin/sh
# Says, after `make install`, whether the akira just installed in the directory $1 is the one a shell
# runs: the directory may be missing from PATH, or an older akira may come before it.
bin=$1
case ":$PATH:" in
  *":$bin:"*) ;;
  *) echo "$bin is not on your PATH: put it first, e.g. export PATH=\"$bin:\$PATH\"" ;;
esac
found=$(command -v akira 2>/dev/null || true)
if [ -n "$found" ] && [ "$found" != "$bin/akira" ]; then
  echo "warning: \`akira\` runs $found, not the one just installed ($bin/akira): remove it, or put $bin before $(dirname "$found") on your PATH"
fi
