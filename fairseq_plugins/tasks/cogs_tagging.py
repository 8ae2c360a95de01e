"""``cogs_tagging``: COGS as sequence tagging (Ontañón et al. 2022, section 4.5.1).

DATA is a folder written by ``scripts/cogs-tags.py``: SPLIT.src (tokens), SPLIT.parent,
SPLIT.role, SPLIT.cat, SPLIT.det, SPLIT.verb (the five tag rows), SPLIT.lf (the logical form),
SPLIT.category (the COGS distribution / generalization case) and meta.json. COGS is small, so the
text is read into memory; no binarization step.

Vocabularies, as the official ``read_cogs_datasets``: every value in the order it first appears
while scanning the splits of meta.json (train, valid, test, gen), so no split has unknown tokens
or tags. fairseq's ``Dictionary`` holds them (its padding index pads; its other specials are
classes that no target uses). The empty tag ``_`` is a real class. Parents are read in the file's
encoding (meta.json ``parent``) and kept as absolute indices; the model's parent head maps them to
its classes. Sentences are padded on the right (the official post-padding), with no end-of-sentence
token, so a token's index is its position.

Validation logs ``accuracy`` (the official metric: all five predicted rows equal to the gold rows
at every token) and ``lf_accuracy`` (the logical form rebuilt from the predicted rows equals the
COGS target), both fractions 0..1 over sentences. ``scripts/cogs-tagging-predict.py`` writes
predictions and both metrics per generalization category.
"""

import json
import logging
import os
from dataclasses import dataclass, field

import numpy as np
import torch
from fairseq.data import Dictionary, FairseqDataset, data_utils
from fairseq.dataclass import FairseqDataclass
from fairseq.tasks import FairseqTask, register_task

from plugin_tools import cogs_tags as ct
from plugin_tools.cogs_tags import ROWS, TAG_ROWS
from plugin_tools.errors import DataNotFoundError, PluginConfigError

logger = logging.getLogger(__name__)

SUFFIX = ct.FILE_SUFFIX  # row -> file suffix
TEXT_FILES = {"src": "src", "lf": "lf", "distribution": "category"}  # key -> file suffix


@dataclass
class CogsTaggingConfig(FairseqDataclass):
    data: str = field(default="", metadata={"help": "folder written by scripts/cogs-tags.py"})
    max_source_positions: int = field(
        default=1024, metadata={"help": "longest sentence the model accepts"}
    )


def _read_lines(path):
    with open(path, encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f]


def read_split(data, split, parent_kind):
    """The examples of one split: dicts with tokens, tags (cogs_tags.Tags with absolute parents,
    file strings for the others), lf, category. Errors name file and line."""
    files = {row: os.path.join(data, f"{split}.{SUFFIX[row]}") for row in ROWS}
    files.update(
        {key: os.path.join(data, f"{split}.{suffix}") for key, suffix in TEXT_FILES.items()}
    )
    for path in files.values():
        if not os.path.isfile(path):
            raise DataNotFoundError(f"{path}: no such file (run scripts/cogs-tags.py)")
    lines = {name: _read_lines(path) for name, path in files.items()}
    n = len(lines["src"])
    for name, rows in lines.items():
        if len(rows) != n:
            raise PluginConfigError(f"{files[name]}: {len(rows)} lines, {files['src']}: {n}")
    examples = []
    for k in range(n):
        tokens = lines["src"][k].split(" ")
        rows = {row: lines[row][k].split(" ") for row in ROWS}
        for row, values in rows.items():
            if len(values) != len(tokens):
                raise PluginConfigError(
                    f"{files[row]}:{k + 1}: {len(values)} tags for {len(tokens)} tokens"
                )
        try:
            parents = ct.decode_parents([int(v) for v in rows["parent"]], parent_kind)
        except (ValueError, ct.TagError) as e:
            raise PluginConfigError(f"{files['parent']}:{k + 1}: {e}") from None
        examples.append(
            {
                "tokens": tokens,
                "parent": parents,
                **{row: rows[row] for row in TAG_ROWS},
                "lf": lines["lf"][k],
                "distribution": lines["distribution"][k],
            }
        )
    return examples


class CogsTaggingDataset(FairseqDataset):
    """In-memory tagging examples, batched with right padding."""

    def __init__(self, examples, src_dict, tag_dicts, shuffle=True):
        self.examples = examples
        self.src_dict = src_dict
        self.tag_dicts = tag_dicts
        self.shuffle = shuffle
        self.sizes = np.array([len(e["tokens"]) for e in examples], dtype=np.int64)
        self.src = [self._encode(src_dict, e["tokens"]) for e in examples]
        self.tags = [
            {row: self._encode(tag_dicts[row], e[row]) for row in TAG_ROWS} for e in examples
        ]

    @staticmethod
    def _encode(dictionary, symbols):
        return torch.tensor([dictionary.index(s) for s in symbols], dtype=torch.long)

    def __getitem__(self, index):
        return {"id": index, "source": self.src[index], **self.tags[index]}

    def __len__(self):
        return len(self.examples)

    def num_tokens(self, index):
        return int(self.sizes[index])

    def size(self, index):
        return int(self.sizes[index])

    def ordered_indices(self):
        order = np.random.permutation(len(self)) if self.shuffle else np.arange(len(self))
        return order[np.argsort(self.sizes[order], kind="mergesort")]

    def collater(self, samples):
        if not samples:
            return {}
        pad = self.src_dict.pad()
        ids = torch.tensor([s["id"] for s in samples], dtype=torch.long)
        src = data_utils.collate_tokens([s["source"] for s in samples], pad, left_pad=False)
        target = {
            row: data_utils.collate_tokens(
                [s[row] for s in samples], self.tag_dicts[row].pad(), left_pad=False
            )
            for row in TAG_ROWS
        }
        parents = [torch.tensor(self.examples[s["id"]]["parent"]) for s in samples]
        target["parent"] = data_utils.collate_tokens(parents, -100, left_pad=False)
        lengths = torch.tensor([s["source"].numel() for s in samples], dtype=torch.long)
        examples = [self.examples[s["id"]] for s in samples]
        return {
            "id": ids,
            "nsentences": len(samples),
            "ntokens": int(lengths.sum()),
            "net_input": {"src_tokens": src, "src_lengths": lengths},
            "target": target,
            "tokens": [e["tokens"] for e in examples],
            "lf": [e["lf"] for e in examples],
            "distribution": [e["distribution"] for e in examples],  # the COGS category
        }


@register_task("cogs_tagging", dataclass=CogsTaggingConfig)
class CogsTaggingTask(FairseqTask):
    """COGS sequence tagging: five tag rows per token, the LF rebuilt from them."""

    cfg: CogsTaggingConfig

    def __init__(self, cfg, meta, src_dict, tag_dicts):
        super().__init__(cfg)
        self.meta = meta
        self.src_dict = src_dict
        self.tag_dicts = tag_dicts
        self.longest = int(meta["longest"])

    @classmethod
    def setup_task(cls, cfg, **kwargs):
        data = cfg.data
        meta_path = os.path.join(data, "meta.json")
        if not os.path.isfile(meta_path):
            raise DataNotFoundError(f"{meta_path}: no such file (run scripts/cogs-tags.py)")
        with open(meta_path, encoding="utf-8") as f:
            meta = json.load(f)
        src_dict = Dictionary()
        tag_dicts = {row: Dictionary() for row in TAG_ROWS}
        for split in meta["splits"]:  # train, valid, test, gen: first appearance order
            for line in _read_lines(os.path.join(data, f"{split}.src")):
                for token in line.split(" "):
                    src_dict.add_symbol(token)
            for row in TAG_ROWS:
                for line in _read_lines(os.path.join(data, f"{split}.{SUFFIX[row]}")):
                    for tag in line.split(" "):
                        tag_dicts[row].add_symbol(tag)
        sizes = ", ".join(f"{row} {len(d) - d.nspecial}" for row, d in tag_dicts.items())
        logger.info(
            f"cogs_tagging: {len(src_dict) - src_dict.nspecial} tokens; tags: {sizes}; "
            f"longest sentence {meta['longest']}; parents in {meta['parent']} files"
        )
        return cls(cfg, meta, src_dict, tag_dicts)

    def load_dataset(self, split, epoch=1, combine=False, **kwargs):
        examples = read_split(self.cfg.data, split, self.meta["parent"])
        logger.info(f"cogs_tagging: {split}: {len(examples)} examples")
        self.datasets[split] = CogsTaggingDataset(
            examples, self.src_dict, self.tag_dicts, shuffle=(split == "train")
        )

    @property
    def source_dictionary(self):
        return self.src_dict

    @property
    def target_dictionary(self):
        return None

    def max_positions(self):
        return self.cfg.max_source_positions

    # ------------------------------------------------------------------------------ scoring

    def predicted_rows(self, sample, prediction, k):
        """The predicted tag rows of sentence k of a batch, as cogs_tags.Tags (absolute parents;
        the empty tag as ``""``)."""
        n = len(sample["tokens"][k])
        rows = [prediction["parent"][k, :n].tolist()]
        for row in TAG_ROWS:
            d = self.tag_dicts[row]
            rows.append(
                [
                    ct.NONE if (s := d[i]) == ct.FILE_NONE else s
                    for i in prediction[row][k, :n].tolist()
                ]
            )
        return ct.Tags(*rows)

    def gold_rows(self, sample, k):
        n = len(sample["tokens"][k])
        target = sample["target"]
        rows = [target["parent"][k, :n].tolist()]
        for row in TAG_ROWS:
            d = self.tag_dicts[row]
            rows.append(
                [ct.NONE if (s := d[i]) == ct.FILE_NONE else s for i in target[row][k, :n].tolist()]
            )
        return ct.Tags(*rows)

    def score(self, sample, prediction):
        """Per sentence of the batch: (predicted Tags, tags exact, LF exact)."""
        out = []
        for k in range(len(sample["tokens"])):
            predicted = self.predicted_rows(sample, prediction, k)
            tags_ok = ct.tags_exact_match(predicted, self.gold_rows(sample, k))
            lf_ok = ct.lf_exact_match(sample["tokens"][k], predicted, sample["lf"][k])
            out.append((predicted, tags_ok, lf_ok))
        return out
