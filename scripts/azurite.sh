#!/usr/bin/env bash
# Azurite (Microsoft's Azure Storage emulator, npm's `azurite`), pinned, into a local folder where the tests
# find it (tests/emulators.py): the Python side's abfs:// remote tier is tested against it on loopback
# (docs/tiered-storage.md §1). Through npm, the ordinary client; about a minute on the 2-core machine.
# Without npm this fails, naming it: the abfs:// tests need the server.
# Idempotent: a finished folder is kept (marker file). SEGLOG_AZURITE_DIR chooses the folder.
set -euo pipefail
AZURITE_VERSION="3.35.0"
dest=${SEGLOG_AZURITE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/seglog/azurite-$AZURITE_VERSION}
[ -f "$dest/.complete" ] && exit 0
if ! command -v npm >/dev/null; then
  echo "azurite.sh: npm is needed to install Azurite (the abfs:// remote tier tests run against it)" >&2
  exit 2
fi
mkdir -p "$dest"
npm install --prefix "$dest" --no-audit --no-fund --silent "azurite@$AZURITE_VERSION"
"$dest/node_modules/.bin/azurite-blob" --version >/dev/null
touch "$dest/.complete"
echo "azurite.sh: azurite $AZURITE_VERSION in $dest" >&2
