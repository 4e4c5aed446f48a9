#!/usr/bin/env bash
# Headless Chromium and its chromedriver from Debian's packages, for the console's browser tests
# (tests/compactor/test_console_browser.py drives them through selenium). Idempotent; needs root to
# install (CI runs as root); elsewhere it says what to run.
set -euo pipefail
if command -v chromium > /dev/null && command -v chromedriver > /dev/null; then
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "chromium or chromedriver is missing: run as root: apt-get install -y chromium chromium-driver" >&2
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq chromium chromium-driver > /dev/null
echo "chromium $(chromium --version 2>/dev/null | awk '{print $2}') installed"
