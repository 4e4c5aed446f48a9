#!/usr/bin/env bash
# fake-gcs-server (github.com/fsouza/fake-gcs-server), pinned, built with `go install` through the Go module
# proxy (checksummed by Go's sum database) into a local folder where the tests find it (tests/emulators.py):
# the Python side's gs:// remote tier is tested against it on loopback (docs/tiered-storage.md §1).
# Run by scripts/setup-test.sh; the build takes 3 to 4 minutes on the 2-core machine the first time.
# Idempotent. SEGLOG_FAKE_GCS_DIR chooses the folder.
set -euo pipefail
FAKE_GCS_VERSION="v1.56.1"
dest=${SEGLOG_FAKE_GCS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/seglog/fake-gcs-server-$FAKE_GCS_VERSION}
[ -x "$dest/fake-gcs-server" ] && exit 0
command -v go >/dev/null || { echo "fake-gcs-server.sh: go is needed to build fake-gcs-server" >&2; exit 2; }
mkdir -p "$dest"
GOBIN="$dest" go install "github.com/fsouza/fake-gcs-server@$FAKE_GCS_VERSION"
echo "fake-gcs-server.sh: fake-gcs-server $FAKE_GCS_VERSION in $dest" >&2
