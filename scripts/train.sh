#!/usr/bin/env bash
# fairseq-train with this plugin, on one device or N (GPUs: fairseq's NCCL path; CPU: gloo ranks).
set -euo pipefail

usage() {
  cat <<'USAGE'
Usage: bash scripts/train.sh DATA_BIN SAVE_DIR [--nproc N] [--cpu] [--port P]
         [--nnodes N --node-rank R --master-addr HOST] [--] [FAIRSEQ_TRAIN_ARGS...]

Runs fairseq-train DATA_BIN --save-dir SAVE_DIR --user-dir fairseq_plugins FAIRSEQ_TRAIN_ARGS
(any registered --arch, e.g. compositional_transformer_iwslt_de_en, graph_transformer, compgen_abs).
  --nproc N   processes on this node (default: number of GPUs, or 1 without GPUs).
              GPUs: fairseq's own NCCL launcher (--distributed-world-size).
              CPU (--cpu or no GPU): one process per rank with gloo, legacy_ddp and
              --distributed-no-spawn (fairseq 0.12's spawn/torchrun paths crash on CPU-only
              hosts). Rank 0 prints to stdout; rank R logs to SAVE_DIR/train.rankR.log.
  --port P    rendezvous port (default 29500 + a hash of SAVE_DIR).
  Multi-node (GPUs): run the same command on every node with --nnodes, --node-rank and
  --master-addr (the node of rank 0); world size = nnodes * nproc, and each node starts
  ranks node_rank*nproc .. node_rank*nproc + nproc - 1.
The log also goes to SAVE_DIR/train.log.
USAGE
}
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

pos=() nproc="" cpu=0 port="" nnodes=1 node_rank=0 master=127.0.0.1 extra=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --nproc) need_positive_int "$@"; nproc=$2; shift 2 ;;
    --cpu) cpu=1; shift ;;
    --port) need_positive_int "$@"; port=$2; shift 2 ;;
    --nnodes) need_positive_int "$@"; nnodes=$2; shift 2 ;;
    --node-rank) need_nonnegative_int "$@"; node_rank=$2; shift 2 ;;
    --master-addr) need_value "$@"; master=$2; shift 2 ;;
    --) shift; extra+=("$@"); break ;;
    # DATA_BIN and SAVE_DIR come first; after them, other arguments go to fairseq-train
    -*) [[ ${#pos[@]} -eq 2 ]] || unknown_option "$1"; extra+=("$1"); shift ;;
    *) if [[ ${#pos[@]} -lt 2 ]]; then pos+=("$1"); else extra+=("$1"); fi; shift ;;
  esac
done
[[ ${#pos[@]} -eq 2 ]] || die_usage "needs DATA_BIN and SAVE_DIR"
data=${pos[0]} save=${pos[1]}
[[ -d $data ]] || die "DATA_BIN '$data' is not a directory"
ls "$data"/dict*.txt >/dev/null 2>&1 || die "no dict.*.txt in DATA_BIN '$data' (run fairseq-preprocess)"

gpus=$(cuda_devices)
[[ $gpus == 0 ]] && cpu=1
[[ -n $nproc ]] || nproc=$([[ $cpu == 1 ]] && echo 1 || echo "$gpus")
[[ -n $port ]] || port=$((29500 + $(printf '%s' "$save" | cksum | cut -d' ' -f1) % 1000))
mkdir -p "$save"
base=(fairseq-train "$data" --save-dir "$save" --user-dir "$root/fairseq_plugins")
world=$((nnodes * nproc))

if [[ $cpu == 0 ]]; then
  if [[ $world -gt 1 ]]; then
    base+=(--distributed-world-size "$world")
    [[ $nnodes -gt 1 ]] && base+=(--distributed-init-method "tcp://$master:$port" --distributed-rank $((node_rank * nproc)))
  fi
  "${base[@]}" ${extra[@]+"${extra[@]}"} 2>&1 | tee "$save/train.log"
  exit "${PIPESTATUS[0]}"
fi

[[ $nnodes == 1 ]] || die "multi-node runs need GPUs (NCCL); CPU ranks run on one host"
if [[ $nproc == 1 ]]; then
  "${base[@]}" --cpu ${extra[@]+"${extra[@]}"} 2>&1 | tee "$save/train.log"
  exit "${PIPESTATUS[0]}"
fi
dist=(--cpu --distributed-backend gloo --ddp-backend legacy_ddp --distributed-no-spawn
      --distributed-world-size "$nproc" --distributed-init-method "tcp://127.0.0.1:$port")
pids=()
for ((rank = 1; rank < nproc; rank++)); do
  "${base[@]}" "${dist[@]}" --distributed-rank "$rank" ${extra[@]+"${extra[@]}"} > "$save/train.rank$rank.log" 2>&1 &
  pids+=($!)
done
trap 'kill "${pids[@]}" 2>/dev/null || true' INT TERM
status=0
"${base[@]}" "${dist[@]}" --distributed-rank 0 ${extra[@]+"${extra[@]}"} 2>&1 | tee "$save/train.log" || status=$?
for ((i = 0; i < ${#pids[@]}; i++)); do
  if ! wait "${pids[$i]}"; then
    log "rank $((i + 1)) failed; see $save/train.rank$((i + 1)).log"
    status=1
  fi
done
exit $status
