#!/usr/bin/env bash
# What the tests take from Debian's packages: headless Chromium and its chromedriver (the console's browser
# tests, tests/compactor/test_console_browser.py, drive them through selenium) and strace (the durability
# tests, tests/system/test_new_partition_durable.py, read the order of a real process's mkdir and fsync calls).
# Idempotent; needs root to install (CI runs as root); elsewhere it says what to run.
set -euo pipefail
if command -v chromium > /dev/null && command -v chromedriver > /dev/null && command -v strace > /dev/null; then
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "chromium, chromedriver or strace is missing: run as root: apt-get install -y chromium chromium-driver strace" >&2
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq chromium chromium-driver strace > /dev/null
echo "chromium $(chromium --version 2>/dev/null | awk '{print $2}') and $(strace -V | head -1) installed"
