#!/bin/sh
# README's test command: the package with its test extra, the browser the playground's test
# drives (Debian's chromium and chromium-driver, installed with apt when they are missing and we
# are root; otherwise it says what to install), then pytest, with any arguments given to it
# (`sh tests/run.sh -m "not slow"` is the quick profile).
set -eu
cd "$(dirname "$0")/.."
python="${PYTHON:-python3}"
"$python" -m pip install -q -e '.[test]'
if ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "installing chromium and chromium-driver with apt, for the playground's browser test"
        (DEBIAN_FRONTEND=noninteractive apt-get update -qq \
            && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null) \
            || echo "apt could not install them: the browser test will fail" >&2
    else
        echo "the playground's browser test needs Chromium and its driver, and they are missing:" \
             "install them (Debian: apt-get install chromium chromium-driver), or set" \
             "JINJAMARK_SKIP_BROWSER=1 to skip that test" >&2
    fi
fi
exec "$python" -m pytest "$@"
