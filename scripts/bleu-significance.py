#!/usr/bin/env python3
"""Paired significance tests of BLEU differences: one baseline against N systems.

Tests (all paired, all on the same sentences):

* paired bootstrap resampling (Koehn 2004) and paired approximate randomization (Riezler &
  Maxwell 2005), both taken from ``sacrebleu.significance.PairedTest`` -- the code behind
  ``sacrebleu REF -i BASE SYS --paired-bs`` / ``--paired-ar`` -- so the numbers agree with the
  sacrebleu CLI: 1000 resamples, 10000 trials, seed 12345, two-sided, p = (c + 1) / (n + 1);
* Moses' ``bootstrap-hypothesis-difference-significance.pl`` protocol (``--moses``), re-implemented
  here: on tokenized text, draw the test set with replacement ``--resamples`` times, count how often
  the system's BLEU beats the baseline's; one-sided p = 1 - wins / resamples.

Each test runs on two BLEU variants and on chrF (``--no-chrf`` leaves it out):

* ``BLEU``: detokenized sacreBLEU (its default 13a tokenizer; the comparable number);
* ``tok-BLEU``: multi-bleu.perl style BLEU on tokenized text -- sacreBLEU with ``tokenize='none'``
  and no smoothing on Moses-tokenized text (``--tokenized``: the inputs already are; otherwise they
  are tokenized with sacremoses). With ``--tokenized`` the detokenized variant is computed on text
  detokenized with sacremoses.
* ``chrF``: detokenized sacreBLEU chrF2 (its defaults, as ``sacrebleu -m chrf``), on the same text
  as ``BLEU``.

Inputs are plain one-sentence-per-line files or fairseq-generate output (``H-<id>``/``T-<id>``
lines in any order, detected automatically and sorted by id; hypothesis = third tab field of the
``H-`` line, reference = ``T-`` line).
"""

import json
import logging
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import _this_checkout  # noqa: F401  (this checkout's packages first on sys.path)

from plugin_tools.cli import OneLineParser

PROG = "significance.sh"
GEN_LINE = re.compile(r"^([HTSDP])-(\d+)\t")


class InputError(Exception):
    """A problem with an input file: reported as one line, exit code 2."""


# --------------------------------------------------------------------------------------------
# reading inputs


@dataclass
class Input:
    path: str
    kind: str  # "plain" or "fairseq-generate"
    hyps: list  # hypothesis lines (plain: the lines)
    refs: list | None = None  # T- lines of fairseq-generate output
    ids: list | None = None


def _read_lines(path):
    p = Path(path)
    if not p.exists():
        raise InputError(f"{path}: no such file")
    if not p.is_file():
        raise InputError(f"{path}: not a regular file")
    try:
        # newline="\n" and rstrip(): exactly how the sacrebleu CLI reads its inputs
        with open(p, encoding="utf-8", newline="\n") as fh:
            lines = [line.rstrip() for line in fh]
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    if not lines:
        raise InputError(f"{path}: empty file")
    return lines


def read_input(path):
    """Read a plain file or fairseq-generate output (detected by its H-<id> lines)."""
    lines = _read_lines(path)
    if not any(line.startswith("H-") and GEN_LINE.match(line) for line in lines):
        return Input(path, "plain", lines)
    hyps, refs = {}, {}
    for raw in lines:
        m = GEN_LINE.match(raw)
        if not m:
            continue  # log lines, the final "Generate test with beam=..." line, ...
        tag, idx = m.group(1), int(m.group(2))
        # fields are tab separated; rstrip() already dropped a trailing tab of an empty text
        fields = raw.split("\t")
        if tag == "H":
            if len(fields) < 2:
                raise InputError(f"{path}: malformed H- line for id {idx}: {raw[:60]!r}")
            # H-<id> \t score \t text; with --nbest > 1 the first (best) one wins
            hyps.setdefault(idx, fields[2] if len(fields) > 2 else "")
        elif tag == "T":
            refs.setdefault(idx, fields[1] if len(fields) > 1 else "")
    ids = sorted(hyps)
    if refs and sorted(refs) != ids:
        raise InputError(
            f"{path}: fairseq-generate output has {len(hyps)} H- lines but {len(refs)} T- lines"
        )
    return Input(
        path,
        "fairseq-generate",
        [hyps[i] for i in ids],
        [refs[i] for i in ids] if refs else None,
        ids,
    )


def load_all(system_paths, ref_path):
    """Read and align the systems and the reference; every problem raises InputError."""
    systems = [read_input(p) for p in system_paths]
    if ref_path is not None:
        ref_in = read_input(ref_path)
        if ref_in.kind == "fairseq-generate":
            if ref_in.refs is None:
                raise InputError(f"{ref_path}: fairseq-generate output without T- lines")
            ref_lines, ref_ids = ref_in.refs, ref_in.ids
        else:
            ref_lines, ref_ids = ref_in.hyps, None
        ref_name = ref_path
    else:
        first_gen = next((s for s in systems if s.kind == "fairseq-generate" and s.refs), None)
        if first_gen is None:
            raise InputError(
                "no reference: pass --ref REF (or give fairseq-generate output with T- lines)"
            )
        ref_lines, ref_ids, ref_name = (
            first_gen.refs,
            first_gen.ids,
            f"T- lines of {first_gen.path}",
        )

    n = len(ref_lines)
    if ref_path is None:
        for s in systems:
            if s.refs is not None and s.refs != ref_lines:
                raise InputError(
                    f"{s.path}: its T- lines differ from the reference ({ref_name}); "
                    "different test sets? pass --ref REF"
                )
    for s in systems:
        if len(s.hyps) != n:
            what = "lines" if s.kind == "plain" else "H- lines"
            raise InputError(
                f"{s.path}: {len(s.hyps)} {what} but the reference ({ref_name}) has {n}"
            )
        if s.kind == "fairseq-generate":
            if ref_ids is not None and s.ids != ref_ids:
                raise InputError(f"{s.path}: sentence ids differ from those of {ref_name}")
            if ref_ids is None and s.ids != list(range(n)):
                raise InputError(
                    f"{s.path}: sentence ids are not 0..{n - 1}, cannot align them with the "
                    f"lines of {ref_name}"
                )
    return systems, ref_lines, ref_name


def system_names(paths, names=None):
    if names:
        return list(names)
    base = [os.path.basename(p) for p in paths]
    out = base if len(set(base)) == len(base) else list(paths)
    seen = {}
    unique = []
    for name in out:
        seen[name] = seen.get(name, 0) + 1
        unique.append(name if seen[name] == 1 else f"{name}#{seen[name]}")
    return unique


# --------------------------------------------------------------------------------------------
# tokenization


def moses_tokenize(lines, lang):
    from sacremoses import MosesTokenizer

    tok = MosesTokenizer(lang=lang)
    return [tok.tokenize(line, escape=False, return_str=True) for line in lines]


def moses_detokenize(lines, lang):
    from sacremoses import MosesDetokenizer

    detok = MosesDetokenizer(lang=lang)
    return [detok.detokenize(line.split()) for line in lines]


def make_metric(variant):
    from sacrebleu.metrics import BLEU, CHRF

    if variant == "BLEU":
        return BLEU()  # sacreBLEU defaults, as the CLI's `-m bleu`
    if variant == "chrF":
        return CHRF()  # sacreBLEU defaults, as the CLI's `-m chrf` (chrF2, character 6-grams)
    return BLEU(tokenize="none", smooth_method="none")  # multi-bleu.perl style


# --------------------------------------------------------------------------------------------
# tests


def paired_tests(named_systems, refs, variant, resamples, trials, seed):
    """sacrebleu's paired bootstrap and approximate randomization for one BLEU variant."""
    from sacrebleu.significance import PairedTest

    # PairedTest and its baseline-CI resampling read the seed from the environment.
    os.environ["SACREBLEU_SEED"] = str(seed)
    out = {}
    for test, n in (("bs", resamples), ("ar", trials)):
        pt = PairedTest(
            named_systems,
            {"chrf" if variant == "chrF" else "bleu": make_metric(variant)},
            references=[refs],
            test_type=test,
            n_samples=n,
            n_ar_confidence=-1,
        )
        sigs, scores = pt()
        (key,) = [k for k in scores if k != "System"]
        out[test] = (sigs[key].format(short=False), scores[key])
    return out


def _num(x):
    """Plain float (or None): chrF's statistics come back as numpy float32, which json rejects."""
    return None if x is None else float(x)


def _p_with_ties(p_sacrebleu, delta):
    # sacrebleu counts resampled differences strictly greater than the observed one, so a system
    # compared with an identical one (observed difference exactly 0) gets p = 1/(n+1); no
    # difference is never evidence of one, so we report p = 1 there.
    return 1.0 if delta == 0.0 else p_sacrebleu


def moses_protocol(named_systems, refs_tok, resamples, seed):
    """bootstrap-hypothesis-difference-significance.pl: sample with replacement, count wins."""
    import numpy as np
    from sacrebleu.significance import estimate_ci

    metric = make_metric("tok-BLEU")
    stats = {
        name: np.array(metric._extract_corpus_statistics(hyps, [refs_tok]), dtype="float64")
        for name, hyps in named_systems
    }
    base_name = named_systems[0][0]
    n_sent = len(refs_tok)
    rows = []
    for name, _ in named_systems[1:]:
        rng = np.random.default_rng(seed)  # same draws for every system, as for one run per pair
        idxs = rng.choice(n_sent, size=(resamples, n_sent), replace=True)
        bl = np.array(
            [metric._compute_score_from_stats(s.sum(0)).score for s in stats[base_name][idxs]]
        )
        sy = np.array([metric._compute_score_from_stats(s.sum(0)).score for s in stats[name][idxs]])
        wins, losses = int((sy > bl).sum()), int((sy < bl).sum())
        mean, ci = estimate_ci(sy)
        bmean, bci = estimate_ci(bl)
        rows.append(
            {
                "system": name,
                "score": metric._compute_score_from_stats(stats[name].sum(0)).score,
                "baseline_score": metric._compute_score_from_stats(stats[base_name].sum(0)).score,
                "mean": float(mean),
                "ci": float(ci),
                "baseline_mean": float(bmean),
                "baseline_ci": float(bci),
                "wins": wins,
                "losses": losses,
                "ties": resamples - wins - losses,
                "samples": resamples,
                "p_value": 1.0 - wins / resamples,
            }
        )
    return rows


def analyse(args):
    names_given = args.names
    if names_given and len(names_given) != len(args.hyps):
        raise InputError(
            f"--names has {len(names_given)} names for {len(args.hyps)} hypothesis files"
        )
    systems, ref_lines, ref_name = load_all(args.hyps, args.ref)
    names = system_names(args.hyps, names_given)

    if args.tokenized:
        tok = {"hyps": [s.hyps for s in systems], "ref": ref_lines}
        detok = {
            "hyps": [moses_detokenize(s.hyps, args.lang) for s in systems],
            "ref": moses_detokenize(ref_lines, args.lang),
        }
    else:
        detok = {"hyps": [s.hyps for s in systems], "ref": ref_lines}
        tok = {
            "hyps": [moses_tokenize(s.hyps, args.lang) for s in systems],
            "ref": moses_tokenize(ref_lines, args.lang),
        }

    result = {
        "baseline": names[0],
        "systems": [{"name": n, "path": s.path, "format": s.kind} for n, s in zip(names, systems)],
        "reference": ref_name,
        "sentences": len(ref_lines),
        "settings": {
            "resamples": args.resamples,
            "trials": args.trials,
            "seed": args.seed,
            "tokenized_input": args.tokenized,
            "lang": args.lang,
        },
        "metrics": {},
    }
    descriptions = {
        "BLEU": "detokenized sacreBLEU (13a)"
        + (" on sacremoses-detokenized input" if args.tokenized else ""),
        "chrF": "detokenized sacreBLEU chrF2"
        + (" on sacremoses-detokenized input" if args.tokenized else ""),
        "tok-BLEU": "tokenized BLEU, multi-bleu style: sacreBLEU tokenize=none, no smoothing, on "
        + ("the given tokenized text" if args.tokenized else "sacremoses-tokenized text"),
    }
    variants = [("BLEU", detok), ("chrF", detok), ("tok-BLEU", tok)]
    if args.no_chrf:
        variants.pop(1)
    for variant, data in variants:
        named = list(zip(names, data["hyps"]))
        tests = paired_tests(named, data["ref"], variant, args.resamples, args.trials, args.seed)
        sig_bs, bs = tests["bs"]
        sig_ar, ar = tests["ar"]
        base_score = bs[0].score
        rows = []
        for i, name in enumerate(names):
            delta = bs[i].score - base_score
            row = {
                "system": name,
                "score": _num(bs[i].score),
                "mean": _num(bs[i].mean),
                "ci": _num(bs[i].ci),
                "delta": None if i == 0 else _num(delta),
                "p_bs": None if i == 0 else _num(_p_with_ties(bs[i].p_value, delta)),
                "p_ar": None if i == 0 else _num(_p_with_ties(ar[i].p_value, delta)),
                "p_bs_sacrebleu": _num(bs[i].p_value),
                "p_ar_sacrebleu": _num(ar[i].p_value),
            }
            if i:
                row["significant_bs"] = row["p_bs"] < args.alpha
                row["significant_ar"] = row["p_ar"] < args.alpha
            rows.append(row)
        result["metrics"][variant] = {
            "description": descriptions[variant],
            "signature_bs": sig_bs,
            "signature_ar": sig_ar,
            "rows": rows,
        }
    if args.moses:
        named_tok = list(zip(names, tok["hyps"]))
        rows = moses_protocol(named_tok, tok["ref"], args.resamples, args.seed)
        for r in rows:
            r["significant"] = r["p_value"] < args.alpha
        result["moses"] = {
            "description": "Moses bootstrap-hypothesis-difference-significance.pl protocol on "
            "tok-BLEU: resample sentences with replacement, one-sided p = 1 - wins/samples",
            "rows": rows,
        }
    return result


# --------------------------------------------------------------------------------------------
# output


def _fmt_p(p, alpha):
    if p is None:
        return "-"
    return f"{p:.4f}{'*' if p < alpha else ''}"


def render(result, fmt, alpha):
    md = fmt == "markdown"
    out = []

    def table(header, rows):
        if md:
            out.append("| " + " | ".join(header) + " |")
            out.append(
                "|" + "|".join("---" if i == 0 else "---:" for i in range(len(header))) + "|"
            )
            for r in rows:
                out.append("| " + " | ".join(r) + " |")
        else:
            widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
            for r in [header, *rows]:
                cells = [
                    str(c).ljust(w) if i == 0 else str(c).rjust(w)
                    for i, (c, w) in enumerate(zip(r, widths))
                ]
                out.append("  ".join(cells).rstrip())
        out.append("")

    s = result["settings"]
    head = (
        f"Paired significance against the baseline {result['baseline']!r}: "
        f"{result['sentences']} sentences, reference {result['reference']}; "
        f"bootstrap {s['resamples']} resamples, approximate randomization {s['trials']} trials, "
        f"seed {s['seed']}."
    )
    out.append(head)
    out.append("")
    for variant, m in result["metrics"].items():
        out.append(f"{'### ' if md else '== '}{variant}: {m['description']}{'' if md else ' =='}")
        out.append("")
        rows = []
        for r in m["rows"]:
            rows.append(
                [
                    ("Baseline: " if r["delta"] is None else "") + r["system"],
                    f"{r['score']:.2f}",
                    f"{r['mean']:.2f} ± {r['ci']:.2f}",
                    "-" if r["delta"] is None else f"{r['delta']:+.2f}",
                    _fmt_p(r["p_bs"], alpha),
                    _fmt_p(r["p_ar"], alpha),
                ]
            )
        table(
            [
                "System",
                variant,
                "bootstrap mean ± 95% CI",
                "Δ vs baseline",
                "p (paired bs)",
                "p (paired ar)",
            ],
            rows,
        )
        tick = "`" if md else ""
        out.append(f"signature (bs): {tick}{m['signature_bs']}{tick}" + ("  " if md else ""))
        out.append(f"signature (ar): {tick}{m['signature_ar']}{tick}")
        out.append("")
    if "moses" in result:
        out.append(
            f"{'### ' if md else '== '}{result['moses']['description']}{'' if md else ' =='}"
        )
        out.append("")
        rows = [
            [
                r["system"],
                f"{r['score']:.2f}",
                f"{r['baseline_score']:.2f}",
                f"{r['mean']:.2f} ± {r['ci']:.2f}",
                f"{r['wins']}/{r['samples']}",
                _fmt_p(r["p_value"], alpha),
            ]
            for r in result["moses"]["rows"]
        ]
        table(
            ["System", "tok-BLEU", "baseline tok-BLEU", "mean ± 95% CI", "wins", "p = 1 - wins/N"],
            rows,
        )
    out.append(
        f"* p < {alpha}. bs/ar p-values are two-sided (a significant difference in either direction: "
        "see the sign of Δ); the Moses protocol's p is one-sided (system better than baseline)."
    )
    return "\n".join(out) + "\n"


def build_parser():
    p = OneLineParser(
        prog=PROG,
        description="Paired bootstrap resampling and approximate randomization (sacrebleu's code) "
        "of one baseline against N systems, on detokenized sacreBLEU and tokenized (multi-bleu "
        "style) BLEU; optionally Moses' bootstrap-hypothesis-difference-significance protocol.",
        epilog="Inputs: plain one-sentence-per-line files or fairseq-generate output (H-/T- "
        "lines, detected automatically). Without --ref the T- lines of the first fairseq-generate "
        "input are the reference. Errors in inputs exit with code 2 and one line on stderr.",
    )
    p.add_argument("hyps", nargs="+", metavar="HYP", help="BASELINE_HYP SYSTEM_HYP...")
    p.add_argument("--ref", help="reference: plain file or fairseq-generate output (T- lines)")
    p.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples (default 1000)")
    p.add_argument(
        "--trials", type=int, default=10000, help="approximate randomization trials (default 10000)"
    )
    p.add_argument("--seed", type=int, default=12345, help="RNG seed, > 0 (default 12345)")
    p.add_argument("--json", metavar="OUT.json", help="also write the results as JSON")
    p.add_argument(
        "--tokenized",
        action="store_true",
        help="inputs are tokenized text (fairseq's usual output)",
    )
    p.add_argument(
        "--moses",
        action="store_true",
        help="add Moses' bootstrap-hypothesis-difference-significance protocol",
    )
    p.add_argument(
        "--lang", default="en", help="language for sacremoses (de)tokenization (default en)"
    )
    p.add_argument(
        "--no-chrf", action="store_true", help="skip the chrF tests (BLEU and tok-BLEU only)"
    )
    p.add_argument("--names", nargs="+", metavar="NAME", help="display names, one per HYP file")
    p.add_argument("--format", choices=["text", "markdown"], default="text", help="table format")
    p.add_argument(
        "--alpha",
        type=float,
        default=0.05,
        help="significance level of the * marker (default 0.05)",
    )
    return p


class _Once(logging.Filter):
    """sacrebleu repeats its warnings (e.g. 'forgot to detokenize') for every resample run."""

    def __init__(self):
        super().__init__()
        self.seen = set()

    def filter(self, record):
        msg = record.getMessage()
        if msg in self.seen:
            return False
        self.seen.add(msg)
        return True


def _quiet_sacrebleu():
    log = logging.getLogger("sacrebleu")
    log.setLevel(logging.WARNING)
    if not log.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("sacrebleu: %(message)s"))
        handler.addFilter(_Once())
        log.addHandler(handler)
        log.propagate = False


def main(argv=None):
    _quiet_sacrebleu()
    parser = build_parser()
    args = parser.parse_intermixed_args(argv)
    if len(args.hyps) < 2:
        parser.error("need a baseline and at least one system: BASELINE_HYP SYSTEM_HYP...")
    for flag in ("resamples", "trials", "seed"):
        if getattr(args, flag) <= 0:
            parser.error(f"--{flag} must be a positive integer")
    try:
        result = analyse(args)
    except InputError as exc:
        sys.stderr.write(f"{PROG}: error: {exc}\n")
        return 2
    sys.stdout.write(render(result, args.format, args.alpha))
    if args.json:
        out = Path(args.json)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
