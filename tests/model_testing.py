"""Build plugin models in-process from command-line style arguments, without data on disk."""

from types import SimpleNamespace

from conftest import USER_DIR
from fairseq import options, utils
from fairseq.data import Dictionary
from fairseq.models import build_model


def toy_dictionary(size=20):
    d = Dictionary()
    for i in range(size):
        d.add_symbol(f"w{i}")
    return d


def build(arch_args, dictionary=None, target_dictionary=None, lm=False):
    """arch_args: list like ['--arch', 'compgen_abs', '--rel-pos', 'e']."""
    utils.import_user_module(SimpleNamespace(user_dir=USER_DIR))
    dictionary = dictionary or toy_dictionary()
    task = "language_modeling" if lm else "translation"
    parser = options.get_training_parser(default_task=task)
    args = options.parse_args_and_arch(
        parser, ["/nonexistent", "--task", task, "--user-dir", USER_DIR] + arch_args
    )
    fake_task = SimpleNamespace(
        source_dictionary=dictionary,
        target_dictionary=target_dictionary or dictionary,
    )
    if lm:
        from fairseq_plugins.models.variant_transformer_lm import VariantTransformerLanguageModel

        return VariantTransformerLanguageModel.build_model(args, fake_task), args
    return build_model(args, fake_task), args
