#!/usr/bin/env bash
# fairseq-train words/second (the wps of fairseq's log) of the plugin's presets against the stock
# transformer on the same data, shape and batch, interleaved runs (A B A B ...).
set -euo pipefail

usage() {
  cat <<'USAGE'
Usage: bash benchmarks/train.sh [--quick] [--data BIN_DIR] [--updates N] [--rounds K]
                                [--max-tokens N] [--threads T] [--pairs "1 2 3"] [--name NAME]

For each round and each pair (preset, stock) runs fairseq-train for N updates on CPU
(--user-dir fairseq_plugins, --no-save, --disable-validation, --log-interval 1) and reads the
per-update wps of fairseq's log; a run's figure is the median wps over its updates after the
first two (warm-up). Per round the ratio preset/stock is taken; reported: median (IQR) over rounds.

Pairs:
  1  compositional_transformer_iwslt_de_en                          vs transformer_iwslt_de_en
  2  graph_transformer_iwslt_de_en --graph-half-dim --graph-fusion weight-gate
                                                                    vs transformer_iwslt_de_en
  3  compgen_rel2_eb_c                                              vs compgen_abs

Data: --data a fairseq-preprocess'd directory with a joined dictionary (e.g. made by
`bash scripts/prepare-multi30k.sh OUT --max-train-lines N`, use OUT/bin); default: the embedded
demo task (scripts/make-demo-data.py), binarised once into benchmarks/.data/demo.

  --quick        1 round, 6 updates, --max-tokens 1024 (a few minutes on 2 cores)
  --updates N    updates per run (default 20)      --rounds K   rounds (default 3)
  --max-tokens N batch size in tokens (default 4096)
  --threads T    OMP/torch threads per run (default 1: on a shared machine more threads spin)
  --pairs LIST   subset of the pairs, e.g. "1 3"   --name NAME  results/NAME.{json,md} (train)
Writes benchmarks/results/NAME.json and NAME.md (logs in benchmarks/.data/logs).
USAGE
}

root=$(cd "$(dirname "$0")/.." && pwd)
data=""; updates=20; rounds=3; max_tokens=4096; threads=1; pairs="1 2 3"; name=train
while [[ $# -gt 0 ]]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --quick) updates=6; rounds=1; max_tokens=1024; shift ;;
    --data) data=$2; shift 2 ;;
    --updates) updates=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --max-tokens) max_tokens=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --pairs) pairs=$2; shift 2 ;;
    --name) name=$2; shift 2 ;;
    *) echo "train.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
for v in updates rounds max_tokens threads; do
  [[ ${!v} =~ ^[1-9][0-9]*$ ]] || { echo "train.sh: --${v//_/-} must be a positive integer" >&2; exit 2; }
done
(( updates > 2 )) || { echo "train.sh: --updates must be at least 3 (2 warm-up updates)" >&2; exit 2; }

py=$root/.venv/bin/python
[[ -x $py ]] || { echo "train.sh: no $py (run bash scripts/setup.sh)" >&2; exit 2; }
work=$root/benchmarks/.data
mkdir -p "$work/logs"
if [[ -z $data ]]; then
  data=$work/demo/bin
  if [[ ! -f $data/dict.src.txt ]]; then
    echo "== binarising the embedded demo task into $data"
    "$py" "$root/scripts/make-demo-data.py" "$work/demo/raw"
    "$root/.venv/bin/fairseq-preprocess" --source-lang src --target-lang tgt \
      --trainpref "$work/demo/raw/train" --validpref "$work/demo/raw/valid" \
      --destdir "$data" --joined-dictionary --workers 1 > "$work/demo/preprocess.log" 2>&1
  fi
fi
[[ -d $data ]] || { echo "train.sh: --data $data is not a directory" >&2; exit 2; }
langs=$(cd "$data" && ls dict.*.txt | sed 's/dict\.\(.*\)\.txt/\1/' | tr '\n' ' ')
read -r src tgt _ <<< "$langs" || true
[[ -n ${src:-} && -n ${tgt:-} ]] || { echo "train.sh: no dict.SRC.txt/dict.TGT.txt in $data" >&2; exit 2; }
# fairseq-preprocess names the pair by its own order; train.bin names it src-tgt or tgt-src
ls "$data"/train."$src-$tgt".* > /dev/null 2>&1 || { t=$src; src=$tgt; tgt=$t; }

declare -A preset stock
preset[1]="--arch compositional_transformer_iwslt_de_en"; stock[1]="--arch transformer_iwslt_de_en"
preset[2]="--arch graph_transformer_iwslt_de_en --graph-half-dim --graph-fusion weight-gate"
stock[2]="--arch transformer_iwslt_de_en"
preset[3]="--arch compgen_rel2_eb_c"; stock[3]="--arch compgen_abs"
for p in $pairs; do
  [[ -n ${preset[$p]:-} ]] || { echo "train.sh: unknown pair '$p' (1, 2 or 3)" >&2; exit 2; }
done

run() {  # run LABEL ARGS... -> log file
  local log=$work/logs/$1.log; shift
  OMP_NUM_THREADS=$threads MKL_NUM_THREADS=$threads "$root/.venv/bin/fairseq-train" "$data" \
    --user-dir "$root/fairseq_plugins" --task translation -s "$src" -t "$tgt" --cpu \
    --optimizer adam --adam-betas "(0.9, 0.98)" --lr 5e-4 --lr-scheduler inverse_sqrt \
    --warmup-updates 100 --criterion label_smoothed_cross_entropy --label-smoothing 0.1 \
    --max-tokens "$max_tokens" --max-update "$updates" --no-save --disable-validation \
    --log-format json --log-interval 1 --seed 1 --num-workers 0 "$@" > "$log" 2>&1 \
    || { echo "train.sh: fairseq-train failed, see $log" >&2; tail -5 "$log" >&2; exit 1; }
  echo "$log"
}

manifest=$work/logs/$name.runs
: > "$manifest"
for ((r = 1; r <= rounds; r++)); do
  for p in $pairs; do
    for side in preset stock; do
      if [[ $side == preset ]]; then args=${preset[$p]}; else args=${stock[$p]}; fi
      echo "== round $r pair $p $side: $args"
      # shellcheck disable=SC2086  # args is a word list
      log=$(run "$name-r$r-p$p-$side" $args)
      printf '%s\t%s\t%s\t%s\n' "$r" "$p" "$side" "$log" >> "$manifest"
    done
  done
done

"$py" - "$manifest" "$name" "$data" "$updates" "$rounds" "$max_tokens" "$threads" \
  "${preset[1]}" "${stock[1]}" "${preset[2]}" "${stock[2]}" "${preset[3]}" "${stock[3]}" <<'PY'
import json, sys
from pathlib import Path
sys.path.insert(0, str(Path("benchmarks").resolve()))
import torch
from common import machine, summary, write_results

manifest, name, data, updates, rounds, max_tokens, threads = sys.argv[1:8]
specs = {"1": sys.argv[8:10], "2": sys.argv[10:12], "3": sys.argv[12:14]}
torch.set_num_threads(int(threads))

def run_wps(log):
    wps = []
    for line in Path(log).read_text().splitlines():
        i = line.find("{")
        if i < 0 or '"wps"' not in line:
            continue
        try:
            rec = json.loads(line[i:])
        except json.JSONDecodeError:
            continue
        if "train_inner" in line[:i] or "update" in rec and "epoch" in rec and "train_wall" in rec:
            wps.append(float(rec["wps"]))
    inner = wps[2:] if len(wps) > 3 else wps
    return summary(inner)["median"], len(wps)

runs = {}
for line in Path(manifest).read_text().splitlines():
    r, p, side, log = line.split("\t")
    runs.setdefault(p, {}).setdefault(side, {})[int(r)] = run_wps(log)

rows = {}
for p, sides in runs.items():
    pre, sto = sides["preset"], sides["stock"]
    ratios = [pre[r][0] / sto[r][0] for r in sorted(pre) if r in sto]
    rows[p] = {
        "preset": specs[p][0], "stock": specs[p][1],
        "preset_wps": summary([v[0] for v in pre.values()]),
        "stock_wps": summary([v[0] for v in sto.values()]),
        "ratio": summary(ratios),
    }
info = {"machine": machine(torch.device("cpu")), "data": data, "updates": int(updates),
        "rounds": int(rounds), "max_tokens": int(max_tokens), "threads": int(threads)}
m = info["machine"]
lines = ["# fairseq-train words/second (interleaved runs)", "",
         f"{m['cpu']}, torch {m['torch']}, {threads} thread(s) per run; git {m['git']}. Data "
         f"`{data}`, --max-tokens {max_tokens}, {updates} updates per run (median per-update wps "
         f"after 2 warm-up updates), {rounds} round(s) A B A B. Ratio: per-round preset/stock, "
         "median (IQR).", "",
         "| preset | stock | preset wps | stock wps | ratio |", "|---|---|---|---|---|"]
for row in rows.values():
    a, b, q = row["preset_wps"], row["stock_wps"], row["ratio"]
    lines.append(f"| `{row['preset'].replace('--arch ', '')}` | `{row['stock'].replace('--arch ', '')}` "
                 f"| {a['median']:.0f} | {b['median']:.0f} | {q['median']:.2f}x ({q['q1']:.2f}-{q['q3']:.2f}) |")
write_results(name, dict(info, results=rows), "\n".join(lines) + "\n")
PY
