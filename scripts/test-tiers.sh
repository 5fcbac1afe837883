#!/bin/sh
# `make test`: three pytest sessions side by side, and the exit status of all three:
# - the session engine's tier: tests/integration without the `own_engines` files; one tiny
#   engine serves every test that only needs a running engine;
# - the own engines' tier: the `own_engines` files of tests/integration (bench ab, cluster,
#   stage, ...), which boot only engines of their own and never the session engine;
# - the rest: tests/unit and tests/security, single-threaded Python (about 3 min alone), then
#   the `beside_unit` files of tests/integration (engines of their own, like own_engines):
#   they even out the sessions. In a fresh-clone run (issue 32) the session engine's tier
#   took 19:00, the own engines' 15:02 and the rest 10:23; the tiny tune (157 s there) and
#   the supervision tests (89 s) moved to the rest.
#
# Why side by side: an engine test spends much of its time waiting (a boot is one process
# importing at a time, then a readiness poll; a tiny model's generation is short), so the
# sessions overlap instead of queueing. Two engine sessions split by a marker, not
# pytest-xdist: xdist's --dist loadgroup, which would keep every session-engine test on one
# worker, did not group here (pytest 9.2, xdist 3.8: one file's integration tests still went
# to both workers, each booting the session engine), and --dist load would boot the session
# engine once per worker by design. tests/integration/conftest.py refuses an `own_engines`
# test that asks for a session engine. Each session's output is printed in turn at the end.
# Usage: sh scripts/test-tiers.sh PYTEST [pytest options for all three]
set -u
pytest_bin=$1; shift
# Every folder of tests/ is in a session, or is not tests: a new folder must be added here,
# not skipped unseen.
for dir in tests/*/; do
    case "$dir" in
        tests/integration/|tests/unit/|tests/security/|tests/support/|tests/fixtures/|tests/__pycache__/) ;;
        *) echo "scripts/test-tiers.sh: $dir is in no session; add it to one" >&2; exit 2 ;;
    esac
done
if ls tests/test_*.py >/dev/null 2>&1; then
    echo "scripts/test-tiers.sh: tests/test_*.py is in no session; move it under tests/unit" >&2
    exit 2
fi
rest_log=$(mktemp "${TMPDIR:-/tmp}/sm121-test-rest.XXXXXX")
own_log=$(mktemp "${TMPDIR:-/tmp}/sm121-test-own.XXXXXX")
"$pytest_bin" -ra --durations=10 -p no:cacheprovider -m "not integration or beside_unit" "$@" \
    tests/unit tests/security tests/integration > "$rest_log" 2>&1 &
rest=$!
"$pytest_bin" -ra --durations=15 -p no:cacheprovider -m own_engines "$@" tests/integration \
    > "$own_log" 2>&1 &
own=$!
# A Ctrl-C or a CI kill stops all three: the others are this script's children.
trap 'kill "$rest" "$own" 2>/dev/null' INT TERM
"$pytest_bin" -ra --durations=25 -m "not own_engines and not beside_unit" "$@" tests/integration
engines=$?
wait "$own"
owns=$?
wait "$rest"
others=$?
echo
echo "==================== tests/integration, own_engines (run beside the above) ===================="
cat "$own_log"
echo
echo "==================== tests/unit, tests/security, beside_unit files (run beside the above) ===================="
cat "$rest_log"
rm -f "$rest_log" "$own_log"
echo "exit status: tests/integration $engines, its own_engines files $owns, tests/unit + tests/security + beside_unit $others"
[ "$engines" -eq 0 ] && [ "$owns" -eq 0 ] && [ "$others" -eq 0 ]
