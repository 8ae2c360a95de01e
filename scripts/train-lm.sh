#!/usr/bin/env bash
# Train a language model with fairseq-train --task language_modeling and this plugin.
set -euo pipefail

usage() {
  cat <<'USAGE'
Usage: bash scripts/train-lm.sh ARCH|CONFIG DATA_BIN SAVE_DIR [-- extra fairseq-train args]

Trains a language model on DATA_BIN (from scripts/prepare-wikitext.sh: OUTDIR/bin) with
fairseq-train --task language_modeling --user-dir fairseq_plugins, checkpoints in SAVE_DIR, the
log in SAVE_DIR/train.log.

  ARCH     any registered arch (transformer_lm, compositional_transformer_lm_wiki103, ...), or
  CONFIG   a file like configs/lm/*.sh that sets ARCH and a bash array TRAIN_ARGS.

Arguments, later ones overriding earlier ones: defaults (Adam (0.9,0.98), inverse_sqrt with 4000
warm-up updates, lr 5e-4, --tokens-per-sample 512, --sample-break-mode none, --max-tokens 2048,
--log-format simple), then the CONFIG's TRAIN_ARGS, then the extra arguments after `--`.
Example:
  scripts/train-lm.sh configs/lm/wikitext2-small.sh data-bin/wikitext-2/bin checkpoints/wt2-small
  scripts/train-lm.sh transformer_lm data-bin/wikitext-2/bin ckpt -- --max-update 100 --cpu
USAGE
}

source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
user_dir=${FAIRSEQ_USER_DIR:-$root/fairseq_plugins}  # --user-dir; FAIRSEQ_USER_DIR overrides

pos=() extra=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --) shift; extra=("$@"); break ;;
    -*) die_usage "unknown option '$1'; fairseq-train arguments go after --" ;;
    *) pos+=("$1"); shift ;;
  esac
done
[[ ${#pos[@]} -eq 3 ]] || die_usage "needs ARCH|CONFIG, DATA_BIN and SAVE_DIR"
arch=${pos[0]} data=${pos[1]} save=${pos[2]}

TRAIN_ARGS=()
if [[ -f $arch ]]; then
  config=$arch ARCH=""
  # shellcheck disable=SC1090
  source "$config" || die "$config: could not be sourced"
  [[ -n ${ARCH:-} ]] || die "$config: does not set ARCH"
  [[ "$(declare -p TRAIN_ARGS 2>/dev/null)" == "declare -a"* ]] || read -r -a TRAIN_ARGS <<<"${TRAIN_ARGS:-}"
  arch=$ARCH
elif [[ $arch == */* || $arch == *.sh ]]; then
  die "$arch: no such config file"
fi
[[ -d $data ]] || die "$data: no such data directory"
[[ -f $data/dict.txt ]] || die "$data: no dict.txt (not a fairseq-preprocess --only-source output?)"
command -v fairseq-train >/dev/null || die "fairseq-train not on PATH (run scripts/setup.sh)"
mkdir -p "$save"

cmd=(fairseq-train "$data" --task language_modeling --user-dir "$user_dir"
  --arch "$arch" --save-dir "$save"
  --optimizer adam --adam-betas "(0.9,0.98)" --lr 0.0005 --lr-scheduler inverse_sqrt
  --warmup-updates 4000 --tokens-per-sample 512 --sample-break-mode none --max-tokens 2048
  --log-format simple --log-interval 50
  ${TRAIN_ARGS[@]+"${TRAIN_ARGS[@]}"} ${extra[@]+"${extra[@]}"})
printf '%q ' "${cmd[@]}" > "$save/command.txt"; echo >> "$save/command.txt"
log "$(cat "$save/command.txt")"
"${cmd[@]}" 2>&1 | tee "$save/train.log"
if [[ " ${cmd[*]} " != *" --no-save "* && ! -f $save/checkpoint_last.pt ]]; then
  die "no checkpoint written to $save (see $save/train.log)"
fi
