#!/bin/sh
# `make test`: the engine tier (tests/integration) and the rest (tests/unit, tests/security)
# as two pytest sessions side by side, and the exit status of both.
#
# Why side by side: the rest is single-threaded Python (about 3 min on the 2-core testbed),
# and the engine tier leaves a core idle much of the time (a boot is one process importing,
# a tiny model's generation is short), so the two overlap instead of queueing. Two sessions
# rather than pytest-xdist: xdist's --dist loadgroup, which would keep every engine test on
# one worker (one session engine, as now), did not group here (pytest 9.2, xdist 3.8: one
# file's integration tests still went to both workers, each booting the session engine), and
# --dist load would boot the session engine once per worker by design. The rest's output is kept and printed after the engine tier's.
# Usage: sh scripts/test-tiers.sh PYTEST [pytest options for both]
set -u
pytest_bin=$1; shift
# Every folder of tests/ is in one of the two sessions, or is not tests: a new folder must be
# added here, not skipped unseen.
for dir in tests/*/; do
    case "$dir" in
        tests/integration/|tests/unit/|tests/security/|tests/support/|tests/fixtures/|tests/__pycache__/) ;;
        *) echo "scripts/test-tiers.sh: $dir is in neither session; add it to one" >&2; exit 2 ;;
    esac
done
if ls tests/test_*.py >/dev/null 2>&1; then
    echo "scripts/test-tiers.sh: tests/test_*.py is in neither session; move it under tests/unit" >&2
    exit 2
fi
rest_log=$(mktemp "${TMPDIR:-/tmp}/sm121-test-rest.XXXXXX")
"$pytest_bin" -ra --durations=10 -p no:cacheprovider "$@" tests/unit tests/security \
    > "$rest_log" 2>&1 &
rest=$!
# A Ctrl-C or a CI kill stops both: the rest is this script's child in the same group.
trap 'kill "$rest" 2>/dev/null' INT TERM
"$pytest_bin" -ra --durations=25 "$@" tests/integration
engines=$?
wait "$rest"
others=$?
echo
echo "==================== tests/unit and tests/security (run beside the above) ===================="
cat "$rest_log"
rm -f "$rest_log"
echo "exit status: tests/integration $engines, tests/unit + tests/security $others"
[ "$engines" -eq 0 ] && [ "$others" -eq 0 ]
