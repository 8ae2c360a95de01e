# Sourced by scripts/compgen-run.sh and scripts/cogs-tagging-run.sh: wall and CPU time of a run,
# summed over the pieces of an interrupted and resumed run. Every piece (also one ended by a
# signal) appends its seconds to DIR/wall.pieces and DIR/cpu.pieces. CPU: user + system time of
# the sourcing shell's finished children (cutime and cstime of /proc/$$/stat; $$ is that shell
# also inside $(...)). Start a piece with: piece_dir=DIR piece_start=$(date +%s.%N)
# piece_cpu=$(children_cpu); end it with end_piece (also run on EXIT, INT and TERM).
clk_tck=$(getconf CLK_TCK)
children_cpu() {
  awk -v hz="$clk_tck" '{ sub(/^.*\) /, ""); printf "%.2f\n", ($14 + $15) / hz }' "/proc/$$/stat"
}
piece_start="" piece_cpu="" piece_dir=""
end_piece() {
  if [[ -n $piece_start && -n $piece_dir && -d $piece_dir ]]; then
    python -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" \
      "$piece_start" "$(date +%s.%N)" >>"$piece_dir/wall.pieces"
    python -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" \
      "$piece_cpu" "$(children_cpu)" >>"$piece_dir/cpu.pieces"
  fi
  piece_start=""
}
# total FILE: the sum of a pieces file
total() { python -c "import sys; print(f'{sum(float(x) for x in open(sys.argv[1])):.1f}')" "$1"; }
trap end_piece EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
