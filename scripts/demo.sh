#!/usr/bin/env bash
# make demo: Akira's main job, end to end, on a throwaway repository, with no API key and no agent installed.
#   AGENT="claude -p --permission-mode acceptEdits" make demo   # a coding-agent CLI on PATH instead
#   AGENT=openai MODEL=gpt-4.1 make demo                         # the built-in agent (OPENAI_API_KEY set)
#   AGENT=anthropic MODEL=claude-sonnet-4-5 make demo             # the built-in agent (ANTHROPIC_API_KEY set)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
akira=${AKIRA_BIN:-$root/bin/akira}
demo_src=$root/examples/demo

dir=${DEMO_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/akira-demo.XXXXXX")}
repo=$dir/calc
# The throwaway repository's lessons stay with it, not in your configuration directory.
export AKIRA_MEMORY_DIR=${AKIRA_MEMORY_DIR:-$dir/lessons}
rm -rf "$repo"
mkdir -p "$repo"
cp -R "$demo_src/repo/." "$repo/"
git -C "$repo" init -q -b main
git -C "$repo" -c user.name="Akira demo" -c user.email="demo@example.com" add -A
git -C "$repo" -c user.name="Akira demo" -c user.email="demo@example.com" commit -q -m "calc: start"

echo "Demo repository: $repo"
echo "Roadmap:"
"$akira" plan "$repo/ROADMAP.md"
echo

# The agent runs in the sandbox (bubblewrap where it runs), which shows it the demo script read-only.
agent_args=(--agent-cmd "$demo_src/agent.sh" --sandbox-ro "$demo_src")
case "${AGENT:-}" in
"") echo "Agent: the scripted demo agent (examples/demo/agent.sh), standing in for a real coding agent." ;;
openai|anthropic) agent_args=(--agent "$AGENT" ${MODEL:+--model "$MODEL"}); echo "Agent: built-in $AGENT agent" ;;
*) agent_args=(--agent-cmd "$AGENT"); echo "Agent: $AGENT" ;;
esac
echo

set +e
"$akira" run --repo "$repo" "${agent_args[@]}" ${DEMO_FLAGS:-}
code=$?
set -e

echo
case $code in
0) echo "All tasks are done." ;;
3) echo "A task is parked for a decision: run the same command again to retry it, or answer on the terminal." ;;
*) echo "akira run exited with $code." ;;
esac
echo "The checkpoints are on branch akira/roadmap of $repo. Look at them with:"
echo "  git -C $repo log --format='%h %s%n%(trailers:key=Akira-Task,key=Akira-Run)' akira/roadmap"
exit $code
