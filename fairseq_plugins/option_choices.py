"""The allowed values of the plugin's model options: the vocabulary of ``variant_config.py`` (and
of the tagging and contextual-retrieval models' own options).

They live with the option schema, not with the modules that implement them: modules import these
names and map each to their implementation in a ``ChoiceRegistry`` (the end of this file); the
schema never imports a module. No torch, no fairseq, no imports here.
"""

# --attention-type (and --decoder-attention-type, --cross-attention-type)
ATTENTION_TYPES = ("multihead", "compositional")
# --encoder-attention-type may also name these: attentions defined within one sequence, without
# causal decoding (the Neural Data Router's geometric attention).
ENCODER_ATTENTION_TYPES = ATTENTION_TYPES + ("geometric",)

# --retrieval-scoring (what each scorer is: RETRIEVAL_SCORERS in modules/compositional_attention.py)
RETRIEVAL_SCORINGS = ("dot", "mlp", "learned-key", "learned-key-mlp")

# --rel-pos (and --encoder-rel-pos, --decoder-rel-pos): the seed papers' relative positions, then
# the position schemes of the length-generalisation literature (docs/method.md §5).
REL_POS_MODES = ("none", "e", "b", "eb")
# cope: decoder self-attention only (variant_config.py refuses it elsewhere).
POSITION_SCHEMES = ("alibi", "t5", "rope", "nope", "fire", "cope")
# The attention types that CoPE is defined for (their logits are per head, or per search, with a
# causal mask); geometric attention is encoder-only and has neither.
COPE_ATTENTION_TYPES = ("multihead", "compositional")
ALL_REL_POS_MODES = REL_POS_MODES + POSITION_SCHEMES

# --position-coupling: the compgen tasks whose digit layout position coupling knows
# (modules/digit_positions.py); unset (None) is off.
COUPLING_TASKS = ("add", "addneg", "reverse", "dup")

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


class ChoiceRegistry(dict):
    """The implementation of every value of one option, the plugin's one registry idiom (attention
    types, position schemes, retrieval scorers, graph fusions): a dict from value to
    implementation, filled by ``register(name)`` (a decorator, or ``register(name, entry)``) in
    the file that holds the implementations; a lookup of a value it lacks raises the one-line
    ``ValueError`` that names the flag. ``choices``: the option's vocabulary above, which
    ``check_complete`` holds the registry to once every value is registered."""

    def __init__(self, flag, choices):
        super().__init__()
        self.flag, self.choices = flag, tuple(choices)

    def register(self, name, entry=None):
        if name not in self.choices:
            raise ValueError(f"{self.flag}: {name!r} is not in option_choices.py")
        if name in self:
            raise ValueError(f"{self.flag}: {name!r} is registered twice")

        def add(implementation):
            self[name] = implementation
            return implementation

        return add if entry is None else add(entry)

    def __missing__(self, name):
        raise ValueError(unknown_choice(self.flag, name, self.choices))

    def check_complete(self):
        missing = [name for name in self.choices if name not in self]
        if missing:
            raise RuntimeError(f"{self.flag}: no implementation of {', '.join(missing)}")
