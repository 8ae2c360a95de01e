#!/usr/bin/env bash
# Fetch the real corpora (Multi30k, WikiText-2, SCAN, COGS) the pipelines and tests use.
set -euo pipefail

usage() {
  cat <<'USAGE'
Usage: bash scripts/get-corpora.sh [--dest DIR] [--timeout SECONDS] [CORPUS...]

Downloads the public originals of CORPUS (multi30k, wikitext-2, scan, cogs; default all) from
GitHub at pinned commits (plugin_tools/corpora.py), in the layout the tools read (multi30k/*.gz,
wikitext-2/{train.txt.gz,valid.txt,test.txt}, scan/..., cogs/...), and checks the size and sha256
of every file. Files already present and verified are skipped, so it is safe to run again.

  --dest DIR          target folder (default $FAIRSEQ_PLUGINS_DATA, else ./corpora in the checkout).
                      Without --dest, a corpus already found (../shared/data) is left alone.
  --timeout SECONDS   per connection (default 15); an unreachable host is tried once.

Where the tools look for the corpora, per corpus: $FAIRSEQ_PLUGINS_DATA/NAME when that is set,
else ../shared/data/NAME beside the checkout, else ./corpora/NAME (plugin_tools/corpora.py).
Offline it prints one line per corpus it could not fetch, saying which files to put where by
hand, and exits 1. FAIRSEQ_PLUGINS_CORPORA_URL replaces https://raw.githubusercontent.com.
USAGE
}
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
if wants_help "$@"; then usage; exit 0; fi
tool corpora --prog "$prog" fetch "$@"  # parses the options (one-line errors)
