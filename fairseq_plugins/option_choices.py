"""The allowed values of the plugin's model options: the vocabulary of ``variant_config.py`` (and
of the tagging and contextual-retrieval models' own options).

They live with the option schema, not with the modules that implement them: modules import these
names (and map each to their implementation), the schema never imports a module. No torch, no
fairseq here.
"""

# --attention-type (and --decoder-attention-type, --cross-attention-type)
ATTENTION_TYPES = ("multihead", "compositional")
# --encoder-attention-type may also name these: attentions defined within one sequence, without
# causal decoding (the Neural Data Router's geometric attention).
ENCODER_ATTENTION_TYPES = ATTENTION_TYPES + ("geometric",)

# --retrieval-scoring. Dot scorers take q_i / sqrt(d_s); the others the unscaled q_i.
RETRIEVAL_SCORINGS = ("dot", "mlp", "learned-key", "learned-key-mlp")
DOT_SCORINGS = ("dot", "learned-key")
LEARNED_KEY_SCORINGS = ("learned-key", "learned-key-mlp")
MLP_SCORINGS = ("mlp", "learned-key-mlp")

# --rel-pos (and --encoder-rel-pos, --decoder-rel-pos): the seed papers' relative positions, then
# the position schemes of the length-generalisation literature (docs/method.md §5).
REL_POS_MODES = ("none", "e", "b", "eb")
POSITION_SCHEMES = ("alibi", "t5", "rope", "nope")
ALL_REL_POS_MODES = REL_POS_MODES + POSITION_SCHEMES

COPY_PROJECTIONS = ("none", "full", "low-rank")  # --copy-projection
GRAPH_FUSIONS = ("sum", "weight-gate", "self-gate")  # --graph-fusion

PARENT_HEADS = ("absolute", "relative", "attention")  # --parent-head (tagging_transformer)
# --tagging-init (tagging_transformer), --seq2seq-init (variant_transformer): modules/keras_init.py
LAYER_INITS = ("fairseq", "official")
# --seq2seq-init also has official-dense: every Dense of the layers too (the notebook path)
SEQ2SEQ_INITS = LAYER_INITS + ("official-dense",)
ATTENTION_INITS = ("pytorch", "module")  # --attention-init (contextual_retrieval_model)
OUTPUT_PROJ_INITS = ("joint", "separate")  # --output-proj-init (contextual_retrieval_model)


def unknown_choice(flag, value, choices):
    """The one-line error text of a value outside ``choices``."""
    shown = ", ".join(c for c in choices if c)
    return f"{flag}: unknown value {value!r} (choose from {shown})"
