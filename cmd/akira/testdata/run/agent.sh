#!/bin/sh
# Scripted stand-in for a coding agent, for the tests of `akira run`. Each task writes <id>.txt.
# Behaviour switches are files in $AKIRA_TEST_LOG (passed through with --env AKIRA_TEST_LOG):
#   fail-<id>         exit 1 without doing anything
#   hang-<id>         start a long sleep (its pid in $AKIRA_TEST_LOG/pid) and wait for it
#   need-banana-<id>  succeed only when the feedback file mentions banana
set -eu
log=$AKIRA_TEST_LOG
echo "$AKIRA_TASK_ID $AKIRA_ATTEMPT" >> "$log/calls"
env > "$log/env-$AKIRA_TASK_ID-$AKIRA_ATTEMPT"
env > "env-$AKIRA_TASK_ID.txt"
if [ -f "$log/fail-$AKIRA_TASK_ID" ]; then
  echo "refusing task $AKIRA_TASK_ID" >&2
  exit 1
fi
if [ -f "$log/hang-$AKIRA_TASK_ID" ]; then
  sleep 300 &
  echo $! > "$log/pid"
  wait
fi
if [ -f "$log/need-banana-$AKIRA_TASK_ID" ] && ! grep -q banana "${AKIRA_FEEDBACK_FILE:-/dev/null}"; then
  echo "the feedback lacks the fruit" >&2
  exit 1
fi
echo "$AKIRA_TASK_TITLE" > "$AKIRA_TASK_ID.txt"
