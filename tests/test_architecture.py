"""The plugin's structure: options parsed once per model into a plan whose slices the builders
get, one attention registry,
quantization noise reaching our attention modules, fairseq patches applied only on the pinned
fairseq version."""

import ast
import subprocess
import sys

import pytest
from conftest import ROOT
from fairseq.modules import MultiheadAttention
from model_testing import build

from fairseq_plugins.modules.attention_registry import (
    ATTENTION_ROLES,
    ATTENTION_TYPES,
    AttentionSpec,
    build_attention,
)
from fairseq_plugins.modules.biased_attention import BiasedAttention
from fairseq_plugins.variant_config import VariantConfig, build_plan


def test_options_are_parsed_once_per_model(monkeypatch):
    calls = []
    parse = VariantConfig.from_args.__func__

    def counting(cls, args):
        calls.append(1)
        return parse(cls, args)

    monkeypatch.setattr(VariantConfig, "from_args", classmethod(counting))
    model, _ = build(["--arch", "compgen_comp_rel2_eb_c", "--graph-encoder"])
    assert len(calls) == 1
    # every builder got its own slice of the one plan, handed down
    encoder, decoder = model.encoder.plan, model.decoder.plan
    assert model.encoder.layers[1].graph_plan is encoder.graph
    assert model.encoder.layers[0].attention_plan is encoder.self_attention
    layer = model.decoder.layers[0]
    assert layer.self_attention_plan is decoder.self_attention
    assert layer.cross_attention_plan is decoder.cross_attention
    assert decoder.self_attention.kind == "compositional"
    assert decoder.self_attention.positions.causal and not decoder.cross_attention.positions.causal


def test_no_builder_takes_the_whole_options():
    """Past the parser (variant_config.py), no function takes the options (a parameter named
    options) nor reads them off a module (``.options``) or a context variable: the builders get
    the plan's slices."""
    takers = []
    for path in sorted((ROOT / "fairseq_plugins").rglob("*.py")):
        if path.name == "variant_config.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            named = isinstance(node, (ast.FunctionDef, ast.Lambda)) and any(
                a.arg == "options" for a in node.args.args + node.args.kwonlyargs
            )
            read = isinstance(node, ast.Attribute) and node.attr in (
                "options",
                "options_being_built",
            )
            if named or read:
                takers.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert takers == []


def test_every_attention_type_builds_for_every_role():
    choices = VariantConfig.__dataclass_fields__["attention_type"].type
    assert {c.value for c in choices} == set(ATTENTION_TYPES)  # --attention-type's choices
    for attention_type in ATTENTION_TYPES:
        options = VariantConfig(
            attention_type=attention_type, rel_pos="eb", rel_pos_cross=True, graph_encoder=True
        )
        plan = build_plan(options)
        for role in ATTENTION_ROLES:
            kdim = 48 if role == "cross" else None
            spec = AttentionSpec(role, 32, 4, 0.0, kdim=kdim)
            module = build_attention(plan.attention(role), spec)
            assert isinstance(module, BiasedAttention)
            assert module.relative_positions is not None
    plain = build_plan(VariantConfig()).attention("decoder")
    stock = build_attention(plain, AttentionSpec("decoder", 32, 4, 0.0))
    assert type(stock) is MultiheadAttention  # no variant option: exactly fairseq's module


@pytest.mark.parametrize("attention", ["multihead", "compositional"])
def test_quant_noise_reaches_the_attention_projections(attention):
    model, _ = build(
        ["--arch", "compgen_rel_eb", "--attention-type", attention]
        + ["--quant-noise-pq", "0.5", "--quant-noise-pq-block-size", "8"]
    )
    attn = model.encoder.layers[0].self_attn
    assert isinstance(attn, BiasedAttention)
    for name in ("q_proj", "k_proj", "v_proj", "out_proj"):
        assert getattr(attn, name)._forward_pre_hooks, name  # fairseq's quant_noise hook
    plain, _ = build(["--arch", "compgen_rel_eb", "--attention-type", attention])
    assert not plain.encoder.layers[0].self_attn.q_proj._forward_pre_hooks


def _import_with_fairseq_version(version):
    code = (
        f"import fairseq; fairseq.__version__ = {version!r}; import fairseq_plugins\n"
        "from fairseq import checkpoint_utils, file_io\n"
        "from fairseq.data import data_utils\n"
        "print(checkpoint_utils.PathManager is file_io.PathManager,"
        " getattr(data_utils.batch_by_size, 'fairseq_plugins_fixed', False))\n"
    )
    return subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )


def test_patches_only_on_the_pinned_fairseq():
    pinned = _import_with_fairseq_version("0.12.3")
    assert pinned.stdout.split() == ["False", "True"]
    assert "fairseq_plugins:" not in pinned.stderr
    other = _import_with_fairseq_version("0.13.0")
    assert other.stdout.split() == ["True", "False"]  # nothing patched
    lines = [line for line in other.stderr.splitlines() if line.startswith("fairseq_plugins:")]
    assert lines == [
        "fairseq_plugins: fairseq 0.13.0 is not the pinned 0.12.3: its batching, "
        "checkpoint-copy and checkpoint-error patches are not applied"
    ]


# -- the front door --------------------------------------------------------------------
PYTHON_FILES = [
    p
    for folder in ("fairseq_plugins", "plugin_tools", "scripts", "tests", "benchmarks")
    for p in sorted((ROOT / folder).rglob("*.py"))
]


def test_every_module_is_imported_by_its_package_name():
    """No module is loaded from its file path (that made second copies of modules: two TagError
    classes); the needle is split so that this file does not match itself."""
    needle = "spec_from_" + "file_location"
    assert [p.relative_to(ROOT) for p in PYTHON_FILES if needle in p.read_text()] == []


def test_no_test_module_imports_another():
    """Shared test helpers live in conftest.py and the *_testing / *_checks / *_reference modules."""
    importing = {}
    for path in sorted((ROOT / "tests").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            for name in names:
                if name.split(".")[0].startswith("test_"):
                    importing.setdefault(path.name, []).append(name)
    assert importing == {}


def test_user_dir_registers_the_models_after_plugin_tools_was_imported():
    """fairseq's --user-dir skips a module already in sys.modules: importing the pure helpers
    first (as the scripts do) must not stop fairseq_plugins from registering its models."""
    code = (
        "import argparse, plugin_tools.cogs_tags, plugin_tools.errors\n"
        "from fairseq import utils\n"
        f"utils.import_user_module(argparse.Namespace(user_dir={str(ROOT / 'fairseq_plugins')!r}))\n"
        "from fairseq.models import ARCH_MODEL_REGISTRY\n"
        "from fairseq.tasks import TASK_REGISTRY\n"
        "print('compgen_rel2_eb_c' in ARCH_MODEL_REGISTRY, 'cogs_tagging' in TASK_REGISTRY)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert proc.stdout.split() == ["True", "True"]


def test_the_option_schema_imports_no_module_and_owns_its_vocabulary():
    """variant_config.py and its vocabulary (option_choices.py) import nothing from the plugin's
    modules/ or models/, nor torch (modules import the vocabulary, not the reverse); every
    attention type the vocabulary names has a factory."""
    from fairseq_plugins.modules.attention_registry import ATTENTION_FACTORIES
    from fairseq_plugins.option_choices import ENCODER_ATTENTION_TYPES

    for name in ("variant_config.py", "option_choices.py"):
        tree = ast.parse((ROOT / "fairseq_plugins" / name).read_text())
        imported = [
            node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
        ]
        imported += [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
        plugin = [m for m in imported if "modules" in m or "models" in m or m == "torch"]
        assert plugin == [], f"{name} imports {plugin}"
    assert set(ATTENTION_FACTORIES) == set(ENCODER_ATTENTION_TYPES)


def test_no_function_in_studies_is_over_60_lines():
    """Every function of studies/ stays short: a report is data plus templates (studies/templates,
    prose goes into a template), a driver's steps are helpers of one purpose each."""
    long = []
    for path in sorted((ROOT / "studies").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef) and node.end_lineno - node.lineno >= 60:
                long.append(f"{path.name}:{node.name} ({node.end_lineno - node.lineno + 1})")
    assert not long, long
