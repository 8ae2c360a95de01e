#!/usr/bin/env bash
# Paired significance tests of BLEU: one baseline against N systems (see scripts/bleu-significance.py).
set -euo pipefail

usage() {
  cat <<'USAGE'
Usage: bash scripts/significance.sh BASELINE_HYP SYSTEM_HYP... --ref REF [--resamples 1000]
         [--trials 10000] [--seed 12345] [--json OUT.json] [--tokenized] [--moses]
         [--lang en] [--no-chrf] [--names NAME...] [--format text|markdown] [--alpha 0.05]

Paired bootstrap resampling (Koehn 2004) and paired approximate randomization, via sacrebleu's own
significance code (the same numbers as `sacrebleu REF -i BASE SYS -m bleu --paired-bs`), for every
system against the baseline, on detokenized sacreBLEU, on detokenized chrF (sacreBLEU chrF2;
--no-chrf skips it) and on tokenized multi-bleu-style BLEU (sacreBLEU tokenize=none on tokenized
text). --moses adds the protocol of Moses'
bootstrap-hypothesis-difference-significance.pl (p = 1 - wins/N, one-sided).

Inputs: plain one-sentence-per-line files or fairseq-generate output (H-/T- lines, any order;
detected automatically). Without --ref, the T- lines of fairseq-generate output are the reference.
--tokenized: the inputs are tokenized (fairseq's H-/T- lines usually are); otherwise they are
detokenized text and tok-BLEU tokenizes them with sacremoses (--lang).

Prints a table (BLEU, bootstrap mean ± 95% CI, Δ vs baseline, p-values, * for p < 0.05, metric
signatures); --json writes the same as JSON. Bad inputs: one line on stderr, exit code 2.
Full option list: scripts/significance.sh --help-all
USAGE
}

source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
case "${1:-}" in
  --help-all) set -- --help ;;
  "") die_usage "needs BASELINE_HYP, SYSTEM_HYP... and --ref REF" ;;
  *) if wants_help "$@"; then usage; exit 0; fi ;;
esac
python=$(python_cmd)
exec "$python" "$root/scripts/bleu-significance.py" "$@"  # parses the options (one-line errors)
