"""fairseq's checkpoint-loading failures as errors that name the file (shown on one line by the
command-line tools): a checkpoint refused by ``weights_only`` loading, a corrupt or truncated file,
a checkpoint whose tensors do not match the model built for it (another ``--arch`` or other
options), and a ``--restore-file`` that does not exist (fairseq would silently train from scratch).

Wraps ``checkpoint_utils.load_checkpoint_to_cpu``, ``checkpoint_utils.load_model_ensemble_and_task``
and ``Trainer.load_checkpoint``; applied by :func:`fairseq_plugins.compat.apply`.
"""

import functools
import inspect
import os
import pickle
import re

from plugin_tools.errors import (
    CheckpointCorruptError,
    CheckpointMismatchError,
    CheckpointNotFoundError,
    CheckpointRefusedError,
    PluginError,
)

LAST_LOADED = {}  # "path": the last checkpoint load_checkpoint_to_cpu read, "arch": its --arch


# -- checkpoint loading ---------------------------------------------------------------------------
def _raised_in_torch_load(exc):
    tb = exc.__traceback__
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename.replace(os.sep, "/")
        if filename.endswith(("torch/serialization.py", "torch/_weights_only_unpickler.py")):
            return True
        tb = tb.tb_next
    return False


def _first_line(text, limit=160):
    lines = [line.strip() for line in str(text).splitlines() if line.strip()]
    line = lines[0].split(". ")[0] if lines else ""
    return line if len(line) <= limit else line[: limit - 3] + "..."


def _refusal_detail(exc):
    for line in str(exc).splitlines():
        if "GLOBAL" in line:
            line = line.split("GLOBAL", 1)[1].split(". ")[0].strip().rstrip(".")
            return f"GLOBAL {line}"
    return _first_line(exc)


def _checkpoint_arch(state):
    cfg = state.get("cfg") if isinstance(state, dict) else None
    try:
        if cfg is not None and cfg.get("model") is not None:
            model = cfg["model"]
            arch = getattr(model, "arch", None) or getattr(model, "_name", None)
            if arch is None and hasattr(model, "get"):
                arch = model.get("arch") or model.get("_name")
            return arch
        args = state.get("args") if isinstance(state, dict) else None
        return getattr(args, "arch", None)
    except Exception:  # an unusual config layout: the arch is only used in messages
        return None


def translate_load_error(path, exc):
    """The PluginError for an exception of fairseq's load_checkpoint_to_cpu(path), or None."""
    text = str(exc)
    if isinstance(exc, pickle.UnpicklingError) and "Weights only load failed" in text:
        if "GLOBAL" not in text:  # not a disallowed class: bytes that are no pickle of ours
            reason = [line for line in text.splitlines() if line.startswith("Unsupported")]
            detail = reason[0].strip() if reason else "not a pickle"
            return CheckpointCorruptError(
                f"checkpoint {path} is corrupt or truncated, or not a PyTorch file ({detail}); "
                "use another checkpoint (e.g. an earlier checkpoint_*.pt)"
            )
        return CheckpointRefusedError(
            f"checkpoint {path} was refused: it holds a pickled global that is not allowed "
            f"(Weights only load failed: {_refusal_detail(exc)}); nothing in it was run. Only "
            "load checkpoints from sources you trust; weights_only stays on."
        )
    if isinstance(exc, (FileNotFoundError, IsADirectoryError, PermissionError)):
        return CheckpointNotFoundError(f"cannot read checkpoint {path}: {exc.strerror}")
    if isinstance(exc, MemoryError):
        return None
    if _raised_in_torch_load(exc):
        size = os.path.getsize(path) if os.path.isfile(path) else None
        detail = "empty file" if size == 0 else f"{type(exc).__name__}: {_first_line(exc)}"
        return CheckpointCorruptError(
            f"checkpoint {path} is corrupt or truncated, or not a PyTorch file ({detail}); "
            "use another checkpoint (e.g. an earlier checkpoint_*.pt)"
        )
    if isinstance(exc, (KeyError, TypeError, AttributeError)):
        return CheckpointCorruptError(
            f"{path} is not a fairseq checkpoint ({type(exc).__name__}: {_first_line(exc)}); "
            "fairseq-train writes them (checkpoint_best.pt, checkpoint_last.pt)"
        )
    return None


def wrap_load_checkpoint_to_cpu(original):
    @functools.wraps(original)
    def load_checkpoint_to_cpu(path, arg_overrides=None, load_on_all_ranks=False):
        try:
            state = original(path, arg_overrides, load_on_all_ranks)
        except PluginError:
            raise
        except Exception as exc:
            error = translate_load_error(path, exc)
            if error is None:
                raise
            raise error from exc
        LAST_LOADED.update(path=path, arch=_checkpoint_arch(state))
        return state

    load_checkpoint_to_cpu.fairseq_plugins_wrapped = True
    return load_checkpoint_to_cpu


_SIZE = re.compile(
    r"size mismatch for (\S+): copying a param with shape torch\.Size\((\[.*?\])\) from "
    r"checkpoint, the shape in current model is torch\.Size\((\[.*?\])\)"
)
_KEYS = re.compile(r"(Missing|Unexpected) key\(s\) in state_dict: (.*)")


def describe_state_dict_mismatch(message):
    """First mismatching key of torch's load_state_dict RuntimeError, in a few words, or None."""
    if "Error(s) in loading state_dict" not in message:
        return None
    sizes = _SIZE.findall(message)
    keys = {kind: re.findall(r'"([^"]+)"', rest) for kind, rest in _KEYS.findall(message)}
    missing, unexpected = keys.get("Missing", []), keys.get("Unexpected", [])
    more = len(sizes) + len(missing) + len(unexpected) - 1
    tail = f" (and {more} more)" if more > 0 else ""
    if sizes:
        key, saved, built = sizes[0]
        detail = f"size mismatch for {key}: checkpoint {saved}, model {built}{tail}"
    elif missing:
        key = missing[0]
        detail = f"{key} is missing from the checkpoint{tail}"
    elif unexpected:
        key = unexpected[0]
        detail = f"the checkpoint has {key}, which this model lacks{tail}"
    else:
        return _first_line(message.split(":", 1)[-1])
    if "embed_tokens" in key or "output_projection" in key:
        detail += "; the data's dictionaries differ from the ones it was trained with?"
    return detail


def _chain(exc):
    seen = []
    while exc is not None and exc not in seen:
        seen.append(exc)
        exc = exc.__cause__ or exc.__context__
    return seen


def wrap_load_model_ensemble_and_task(original):
    """fairseq-generate/-interactive/-validate/-eval-lm, hub from_pretrained."""

    signature = inspect.signature(original)

    @functools.wraps(original)
    def load_model_ensemble_and_task(filenames, *args, **kwargs):
        call = signature.bind(filenames, *args, **kwargs)
        call.apply_defaults()
        suffix, num_shards = call.arguments["suffix"], call.arguments["num_shards"]
        if num_shards == 1 and not suffix:  # (else fairseq derives the file names)
            from fairseq.file_io import PathManager

            for filename in filenames:
                if not PathManager.exists(filename):
                    raise CheckpointNotFoundError(f"--path {filename}: no such checkpoint")
        try:
            return original(filenames, *args, **kwargs)
        except RuntimeError as exc:
            detail = describe_state_dict_mismatch(str(exc))
            if detail is None or isinstance(exc, PluginError):
                raise
            path = LAST_LOADED.get("path") or ", ".join(map(str, filenames))
            arch = LAST_LOADED.get("arch") or "?"
            raise CheckpointMismatchError(
                f"checkpoint {path} does not match the model built for it (--arch {arch} with "
                f"this command's --model-overrides and data): {detail}"
            ) from exc

    load_model_ensemble_and_task.fairseq_plugins_wrapped = True
    return load_model_ensemble_and_task


def wrap_trainer_load_checkpoint(original):
    """fairseq-train: --restore-file (default SAVE_DIR/checkpoint_last.pt)."""

    @functools.wraps(original)
    def load_checkpoint(self, filename, *args, **kwargs):
        from fairseq.file_io import PathManager

        restore = getattr(self.cfg.checkpoint, "restore_file", "checkpoint_last.pt")
        if restore != "checkpoint_last.pt" and not PathManager.isfile(filename):
            # fairseq would log "No existing checkpoint found" and train from scratch
            raise CheckpointNotFoundError(f"--restore-file {filename}: no such checkpoint")
        try:
            return original(self, filename, *args, **kwargs)
        except PluginError:
            raise
        except Exception as exc:
            if not str(exc).startswith("Cannot load model parameters from checkpoint"):
                raise
            for inner in _chain(exc)[1:]:
                if isinstance(inner, PluginError):
                    raise inner from None
                detail = describe_state_dict_mismatch(str(inner))
                if detail is not None:
                    model_cfg = self.cfg.model
                    arch = getattr(model_cfg, "arch", None) or getattr(model_cfg, "_name", "?")
                    saved = LAST_LOADED.get("arch")
                    saved = f" (it was saved by --arch {saved})" if saved else ""
                    raise CheckpointMismatchError(
                        f"checkpoint {filename} does not match --arch {arch} and the model "
                        f"options of this run{saved}: {detail}. Train in another --save-dir, or "
                        "pass the options it was trained with"
                    ) from exc
            raise

    load_checkpoint.fairseq_plugins_wrapped = True
    return load_checkpoint


def install_checkpoint_errors():
    from fairseq import checkpoint_utils
    from fairseq.trainer import Trainer

    if not getattr(checkpoint_utils.load_checkpoint_to_cpu, "fairseq_plugins_wrapped", False):
        checkpoint_utils.load_checkpoint_to_cpu = wrap_load_checkpoint_to_cpu(
            checkpoint_utils.load_checkpoint_to_cpu
        )
    ensemble = checkpoint_utils.load_model_ensemble_and_task
    if not getattr(ensemble, "fairseq_plugins_wrapped", False):
        checkpoint_utils.load_model_ensemble_and_task = wrap_load_model_ensemble_and_task(ensemble)
    if not getattr(Trainer.load_checkpoint, "fairseq_plugins_wrapped", False):
        Trainer.load_checkpoint = wrap_trainer_load_checkpoint(Trainer.load_checkpoint)
