# Multi30k En->De study: Graph-Transformer with the fusion found best on validation among sum and
# self-gate (both full-dimension). A selection config of scripts/compare-nmt.sh: both candidates
# train SELECT_EPOCHS epochs of the shared recipe (first seed), the one with the lower validation
# loss wins and its run continues from that checkpoint to the full recipe (epoch cap, patience);
# the loser costs SELECT_EPOCHS epochs. Further seeds train the winner from scratch. The choice
# and both validation losses are in OUT/multi30k-ende-graph-best/selection.txt and the report.
NAME=multi30k-ende-graph-best
SELECT_FROM=(multi30k-ende-graph-sum.sh multi30k-ende-graph-selfgate.sh)
SELECT_EPOCHS=2
