#!/usr/bin/env bash
# `make demo`'s calls that fail on purpose (a runaway stopped, a grant
# refused, a broken plugin refused): shows the command and toolhost's own
# error, then says the failure is the demonstration. The demo goes on only
# if toolhost failed the way a refused call does (exit 1, or 2 for a file
# it will not load); a success, a crash or a signal stops it as a real failure.
# Usage: bash plugins/demo-fails.sh TOOLHOST ARGS...
echo "$*"
"$@"
status=$?
case $status in
    1 | 2) echo "   (exit $status: the failure this part shows)" ;;
    0) echo "demo: \`$*\` should have failed, and succeeded" >&2; exit 1 ;;
    *) echo "demo: \`$*\` ended with exit $status, not a refusal" >&2; exit 1 ;;
esac
