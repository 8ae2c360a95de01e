"""The plan of the compgen grid (`grid`, scripts/compgen-grid.sh): its columns, rows and the COGS
tagging models, at the short budget and at the authors' budget (`--budget paper`). The grid runs it and the report (:mod:`.grid_report`) counts it."""

from typing import NamedTuple


class Column(NamedTuple):
    """A column: the task, its budget (N updates, or eN: N epochs of the authors' loader), the
    compgen-run data options, and its block (the plan runs block by block, all seeds of a block
    before the next)."""

    task: str
    budget: str
    data: tuple = ()
    block: int = 1


class Row(NamedTuple):
    """A row: the preset, its seeds, extra fairseq-train options, and the only columns it runs
    (None: all)."""

    preset: str
    seeds: int
    extra: tuple = ()
    only: tuple | None = None


TAGGING_TASK = "cogs-tagging"

# Budgets are far below the paper's (see docs/compgen-results.md): 1,500 updates of 64 examples
# where the paper's abs-vs-rel2 gap shows (Add, AddNeg, Reverse, Dup), fewer where every row of
# the paper is near 0 or 0.5 or where sequences are long (Cart outputs up to 191 tokens, SCAN up
# to 48, COGS up to ~500).
# cogs: 2,000 updates (5.3 epochs of the 24,155 training sentences, about 0.15 CPU s each); at
# 700 every row measured (abs, rel-eb, rel2-eb) scored 0.000 on gen, with valid accuracy 0.35.
# cogs-tagging (cogs-tagging-run, whole official splits, no data options): 4,000 updates (10.6
# epochs; the notebook's 6,000 less a third), measured at 0.03-0.04 CPU s per update, so one seed
# of its 5 models costs about 16 CPU minutes with evaluation.
VALID_256 = ("--valid", "256")
VALID_500 = ("--valid", "500")
COGS_DATA = ("--valid", "500", "--test", "2100")
COLUMNS = [
    Column("add", "1500", VALID_256),
    Column("addneg", "1500", VALID_256),
    Column("reverse", "1500", VALID_256),
    Column("dup", "1500", VALID_256),
    Column("cart", "400", VALID_256 + ("--test", "512")),
    Column("inters", "1000", VALID_256),
    Column("scan-length", "1000", VALID_500),
    Column("scan-addjump", "1000", VALID_500),
    Column("cogs", "2000", COGS_DATA),
    Column(TAGGING_TASK, "4000"),
]
# The authors' budgets (seq2seq.ipynb and cogs_tagging.ipynb), blocks in their order of
# priority. Same data options as the short grid (the valid split only picks the best
# checkpoint, reported beside the final one).
PAPER_COLUMNS = [
    Column(TAGGING_TASK, "e16", (), 1),
    Column("add", "e2", VALID_256, 2),
    Column("reverse", "e2", VALID_256, 2),
    Column("cogs", "e16", COGS_DATA, 3),
    Column("dup", "e4", VALID_256, 3),
    Column("scan-length", "e24", VALID_500, 4),
    Column("scan-addjump", "e24", VALID_500, 4),
    Column("addneg", "e10", VALID_256, 5),
    # Cart's targets are up to 191 tokens and Inters runs 25,000 updates: the costliest columns
    # last. Their test sets keep the notebook's 1,024 examples (16 full batches of 64).
    Column("cart", "e4", VALID_256, 6),
    Column("inters", "e8", VALID_256, 6),
]
# 3 seeds for abs and comp-rel2-eb-c, 2 for the others: with a third seed of rel2-eb-c too the
# grid would be about 9 CPU hours against a budget of about 5. compgen_small_2s is the paper's small-2s of Table 4: rel2-eb-c with weight
# sharing (the preset alone is abs without copy decoder). The position-scheme rows (ALiBi, T5 bias,
# RoPE, NoPE decoder, the Neural Data Router, each with the copy decoder as the best existing
# row, and one scheme with compositional attention; T5 until the grid says which scheme is best)
# run NEW_SCHEME_COLUMNS only, 2 seeds as rel2-eb-c: about 4.2 CPU hours. rel-eb-c is their
# one-factor baseline: the same model with rel-eb in self-attention (the schemes replace it; the
# NoPE row removes it from the decoder) and, like them, no relative cross-attention (rel2-eb-c has
# it), so each scheme is compared with one factor changed (about 0.7 CPU hours).
NEW_SCHEME_COLUMNS = ("add", "addneg", "reverse", "dup", "scan-length", "cogs")
ROWS = [
    Row("compgen_abs", 3),
    Row("compgen_rel_eb", 2),
    Row("compgen_rel2_eb", 2),
    Row("compgen_rel2_eb_c", 3),
    Row("compgen_small_2s", 2, ("--rel-pos", "eb", "--rel-pos-cross", "--copy-decoder")),
    Row("compgen_comp_rel2_eb_c", 3),
    Row("compgen_comp_rel2_eb_cs", 2),
    Row("compgen_rel_eb_c", 3, (), NEW_SCHEME_COLUMNS),
    Row("compgen_alibi_c", 3, (), NEW_SCHEME_COLUMNS),
    Row("compgen_t5_c", 3, (), NEW_SCHEME_COLUMNS),
    Row("compgen_rope_c", 3, (), NEW_SCHEME_COLUMNS),
    Row("compgen_rel_eb_nope_c", 3, (), NEW_SCHEME_COLUMNS),
    Row("compgen_ndr_c", 3, (), NEW_SCHEME_COLUMNS),
    Row("compgen_comp_t5_c", 3, (), NEW_SCHEME_COLUMNS),
]
# A third seed for the position-scheme rows, their baselines rel-eb-c and rel2-eb-c, so that the
# differences seen in both of the first two seeds can be tested (t with 2 degrees of freedom).
SEQ2SEQ_COLUMNS = ("add", "reverse", "cogs", "dup", "scan-length", "scan-addjump", "addneg")
SEQ2SEQ_COLUMNS += ("cart", "inters")
PAPER_ROWS = [
    Row("compgen_abs", 3, (), SEQ2SEQ_COLUMNS),
    Row("compgen_rel2_eb_c", 3, (), SEQ2SEQ_COLUMNS),
    Row("compgen_comp_rel2_eb_c", 3, (), SEQ2SEQ_COLUMNS),
    Row("compgen_comp_rel2_eb_cs", 3, (), SEQ2SEQ_COLUMNS),
    Row("cogs_tagging_tuned", 5, (), (TAGGING_TASK,)),
    Row("cogs_tagging_base", 5, (), (TAGGING_TASK,)),
    Row("cogs_tagging_tuned_comp", 5, (), (TAGGING_TASK,)),
]
# The position methods of the length-generalisation literature at the authors' budgets, on the
# four algorithmic columns, 3 seeds, each paired by seed with rel2-eb-c (the seed paper's best
# row): ALiBi, T5 bias, RoPE and FIRE in self-attention, the same with the scheme in the
# decoder-to-encoder attention too ("2", as rel2), CoPE in the decoder (rel-eb encoder), and
# FIRE reading randomized positions.
POSITION_COLUMNS = ("add", "addneg", "reverse", "dup")
POSITION_ROWS = tuple(
    f"compgen_{s}{n}_c" for n in ("", "2") for s in ("alibi", "t5", "rope", "fire")
)
POSITION_ROWS += ("compgen_rel_eb_cope_c", "compgen_fire_rand_c")
PAPER_ROWS += [Row(preset, 3, (), POSITION_COLUMNS) for preset in POSITION_ROWS]
# Input-side digit positions on rel2-eb-c: Abacus ids on the four columns; position coupling is
# defined per format, so one row per column (its preset names the column's format).
PAPER_ROWS += [Row("compgen_rel2_eb_abacus_c", 3, (), POSITION_COLUMNS)]
PAPER_ROWS += [Row(f"compgen_rel2_eb_coupled_{t}_c", 3, (), (t,)) for t in POSITION_COLUMNS]
POSITION_ROWS += ("compgen_rel2_eb_abacus_c",)
POSITION_ROWS += tuple(f"compgen_rel2_eb_coupled_{t}_c" for t in POSITION_COLUMNS)
# COGS tagging: the model is encoder-only, so each row is tagged by the tagging_transformer
# architecture with the row's encoder: row -> (tagging arch, extra fairseq-train options), or
# ("=ROW", ()): the same encoder as ROW, whose tagging run stands for this row too (not trained
# again). The parent head is each tagging preset's default (absolute for base, rel_eb and
# rel_eb_s). compgen_comp_rel2_eb_c's encoder: rel-eb self-attention made compositional with
# S = R = 4 (the preset's --attention-type compositional; S and R default to the 4 heads, written
# out here).
COMPOSITIONAL = (
    "--attention-type",
    "compositional",
    "--num-searches",
    "4",
    "--num-retrievals",
    "4",
)
TAGGING = {
    # The abs row's encoder with fairseq's initialisation, as every grid row (the notebook's
    # base model defaults to the notebook's).
    "compgen_abs": ("cogs_tagging_base", ("--tagging-init", "fairseq")),
    "compgen_rel_eb": ("cogs_tagging_rel_eb", ()),
    "compgen_rel2_eb": ("=compgen_rel_eb", ()),
    "compgen_rel2_eb_c": ("=compgen_rel_eb", ()),
    "compgen_small_2s": ("cogs_tagging_rel_eb_s", ()),
    "compgen_comp_rel2_eb_c": ("cogs_tagging_rel_eb", COMPOSITIONAL),
    "compgen_comp_rel2_eb_cs": ("cogs_tagging_rel_eb_s", COMPOSITIONAL),
    "cogs_tagging_tuned": ("cogs_tagging_tuned", ()),
    "cogs_tagging_base": ("cogs_tagging_base", ()),
    "cogs_tagging_tuned_comp": ("cogs_tagging_tuned", COMPOSITIONAL),
}
# fairseq-train options of every grid run: checkpoints every 500 updates (to resume), validation
# at the checkpoints only.
COMMON = (
    "--cpu", "--save-interval-updates", "500", "--keep-interval-updates", "1",
    "--save-interval", "1000000", "--validate-interval", "1000000", "--log-interval", "100",
)  # fmt: skip
BUDGETS = {"short": (COLUMNS, ROWS), "paper": (PAPER_COLUMNS, PAPER_ROWS)}


def tagging_source(preset):
    """The row whose tagging run stands for PRESET (itself, or OTHER for `=OTHER`)."""
    arch = TAGGING.get(preset, ("", ()))[0]
    return arch[1:] if arch.startswith("=") else preset


def runs_column(row, task):
    return row.only is None or task in row.only


def check_tagging():
    """Every row that runs the tagging column has a TAGGING entry; =OTHER names a row with its
    own run (a broken table is a bug of this file)."""
    for _, rows in BUDGETS.values():
        for row in rows:
            if not runs_column(row, TAGGING_TASK):
                continue
            assert row.preset in TAGGING, f"{row.preset} has no TAGGING entry"
            source = tagging_source(row.preset)
            assert TAGGING[source][0].startswith("cogs_tagging"), f"TAGGING of {row.preset}"


def plan(budget="short", only_tasks=(), only_presets=()):
    """The cells [(seed, Column, Row)] in run order: block, then seed round, then column, then
    row; the tagging cells of rows that share another row's tagging run are left out."""
    columns, rows = BUDGETS[budget]
    max_seeds = max(r.seeds for r in rows)
    cells = []
    for block in sorted({c.block for c in columns}):
        for seed in range(1, max_seeds + 1):
            for col in columns:
                if col.block != block or (only_tasks and col.task not in only_tasks):
                    continue
                for row in rows:
                    if only_presets and row.preset not in only_presets:
                        continue
                    if not runs_column(row, col.task) or seed > row.seeds:
                        continue
                    if col.task == TAGGING_TASK and tagging_source(row.preset) != row.preset:
                        continue
                    cells.append((seed, col, row))
    return cells


def plan_total(budget="short"):
    return len(plan(budget))
