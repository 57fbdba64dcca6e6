#!/usr/bin/env bash
# One entry point for a fresh clone: creates ./.venv on first use (and again when pyproject.toml changes),
# then runs what is asked.
#   ./run.sh demo            the main job on embedded defaults (`crawler demo`)
#   ./run.sh test [ARGS]     lint and format check, type check, import contracts and the test suite (pytest -n 2 ARGS)
#   ./run.sh bench [ARGS]    bench/extraction.py with the peers installed (pip install .[bench])
#   ./run.sh crawler ARGS    any `crawler` command, in the folder it is run from
set -euo pipefail
# `crawler` commands run in the caller's folder (its rules/ and data/); the rest in the checkout.
here=$PWD
cd "$(dirname "$0")"
checkout=$PWD
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
        # setuptools warns at every editable build that a folder named like the package may shadow it:
        # this checkout is that folder, installed on purpose.
        PYTHONWARNINGS=ignore::UserWarning "$venv/bin/python" -m pip install --quiet -e ".[$extras]"
        touch "$stamp"
    fi
}

# `crawler` names itself the way it was run here: in its usage, help, messages and the commands they suggest.
case "$0" in
    */*) runner=$0 ;;
    *) runner=./$0 ;;
esac
CRAWLER_COMMAND="$(printf '%q' "$runner") crawler"
export CRAWLER_COMMAND
cmd=${1:-help}
shift || true
case "$cmd" in
    demo)
        ensure_venv dev
        cd "$here"
        exec "$checkout/$venv/bin/crawler" demo "$@" ;;
    test)
        ensure_venv dev
        "$venv/bin/ruff" check .
        "$venv/bin/ruff" format --check .
        "$venv/bin/mypy"
        "$venv/bin/lint-imports"
        # Two test files at a time: most tests wait on crawls in other processes (CI has 2 cores). Whole
        # files, so that a module's fixtures are made once; `./run.sh test -n 0` runs them one by one.
        exec "$venv/bin/pytest" -n 2 --dist loadfile "$@" ;;
    bench)
        ensure_venv dev,bench
        exec "$venv/bin/python" bench/extraction.py "$@" ;;
    crawler)
        ensure_venv dev
        cd "$here"
        exec "$checkout/$venv/bin/crawler" "$@" ;;
    help | -h | --help)
        sed -n '2,7p' "$checkout/$(basename "$0")" | sed 's/^# \{0,1\}//' ;;
    *)
        echo "run.sh: unknown command '$cmd'" >&2
        sed -n '2,7p' "$checkout/$(basename "$0")" | sed 's/^# \{0,1\}//' >&2
        exit 2 ;;
esac
