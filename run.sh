#!/usr/bin/env bash
# One entry point for a fresh clone: creates ./.venv on first use (and again when pyproject.toml changes),
# then runs what is asked.
#   ./run.sh demo            the main job on embedded defaults (`crawler demo`)
#   ./run.sh test [ARGS]     lint, type check, import contracts and the test suite (pytest ARGS)
#   ./run.sh bench [ARGS]    bench/extraction.py with the peers installed (pip install .[bench])
#   ./run.sh crawler ARGS    any `crawler` command
set -euo pipefail
cd "$(dirname "$0")"
venv=.venv
python=${PYTHON:-python3}

ensure_venv() {
    local extras=$1 stamp="$venv/.installed-$1"
    if [ ! -x "$venv/bin/python" ]; then
        "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
            || { echo "run.sh: Python 3.11+ is needed, $python is $("$python" --version 2>&1)" >&2; exit 2; }
        "$python" -m venv "$venv"
        "$venv/bin/python" -m pip install --quiet --upgrade pip
    fi
    if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
        "$venv/bin/python" -m pip install --quiet -e ".[$extras]"
        touch "$stamp"
    fi
}

# The commands `crawler` suggests in its messages are run the way it was run here.
export CRAWLER_COMMAND="./run.sh crawler"
cmd=${1:-help}
shift || true
case "$cmd" in
    demo)
        ensure_venv dev
        exec "$venv/bin/crawler" demo "$@" ;;
    test)
        ensure_venv dev
        "$venv/bin/ruff" check .
        "$venv/bin/mypy"
        "$venv/bin/lint-imports"
        exec "$venv/bin/pytest" "$@" ;;
    bench)
        ensure_venv dev,bench
        exec "$venv/bin/python" bench/extraction.py "$@" ;;
    crawler)
        ensure_venv dev
        exec "$venv/bin/crawler" "$@" ;;
    help | -h | --help)
        sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//' ;;
    *)
        echo "run.sh: unknown command '$cmd'" >&2
        sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//' >&2
        exit 2 ;;
esac
