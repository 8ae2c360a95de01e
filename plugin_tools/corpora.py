"""Where the real corpora (Multi30k, WikiText-2, SCAN, COGS) are, and fetching them.

The one resolution every tool uses (tests/conftest.py, scripts/compgen-data.py, and the shell
scripts through ``python -m plugin_tools.corpora path NAME``), per corpus:

1. ``$FAIRSEQ_PLUGINS_DATA/NAME`` when that variable is set (then nothing else is looked at);
2. ``../shared/data/NAME`` beside the checkout;
3. ``./corpora/NAME`` inside the checkout (git-ignored), which ``scripts/get-corpora.sh`` fills.

A corpus counts as found in the first of these folders that holds all its data files. Fetching
downloads the public originals (at the commits pinned in ``CORPORA`` below) into
``$FAIRSEQ_PLUGINS_DATA`` or ``./corpora``, in the same layout, checking the size and sha256 of
every file's content (unpacked for .gz). ``FAIRSEQ_PLUGINS_CORPORA_URL`` replaces the host
``https://raw.githubusercontent.com`` (a mirror; the tests point it at a local server).

Standard library only: it runs as a script without the venv and without importing fairseq.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import sys
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import NamedTuple

from plugin_tools.cli import OneLineParser, called_as

DATA_ENV = "FAIRSEQ_PLUGINS_DATA"
REQUIRE_ENV = "FAIRSEQ_PLUGINS_REQUIRE_CORPORA"
URL_ENV = "FAIRSEQ_PLUGINS_CORPORA_URL"
ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "data"
LOCAL = ROOT / "corpora"
RAW_HOST = "https://raw.githubusercontent.com"
TIMEOUT = 15  # seconds per connection; an unreachable host is tried once per run
FETCH_CMD = "bash scripts/get-corpora.sh"


class File(NamedTuple):
    path: str  # in the corpus folder; ending in .gz: stored gzip-compressed
    upstream: str  # path in the repository (plain when path is .gz and this is not: gzip it)
    size: int  # bytes of the content (unpacked)
    sha256: str  # of the content (unpacked)
    required: bool = True  # False: fetched, but nothing needs it (LICENSE)


class Corpus(NamedTuple):
    name: str
    repo: str  # owner/name on GitHub
    refs: tuple  # the pinned commit first, then the branch the prepare scripts used to name
    files: tuple


def _m30k(split, lang, size, sha):
    return File(f"{split}.{lang}.gz", f"data/task1/raw/{split}.{lang}.gz", size, sha)


# fmt: off
CORPORA = {
    c.name: c
    for c in (
        Corpus(
            "multi30k",
            "multi30k/dataset",
            ("a3d2e0d26b56f3846f66a952536ffed4e401d05a", "master"),
            (
                _m30k("train", "de", 2110398, "2c2b73fd2b548fbcde3a875e0a78d6ee94d498bfdee6bd3eae3945779e9ddf72"),
                _m30k("train", "en", 1801238, "460a15fbd157e34a7a9957ee388c1ca247fe47af3ef25fb50442af6c274e0fc6"),
                _m30k("train", "fr", 2111303, "5925a3c18f1587b6b54b87743106e6e8ab93618edb6f65d19eac0621f853a10d"),
                _m30k("val", "de", 75981, "660e09eb7e1da2f856ea13ee5ad3cf6d36b3d5b0b733c857e94c5747a3dfc660"),
                _m30k("val", "en", 63297, "1f2a23d992769b5b3d209b0a10dd0b77c08cceb1f20dfb97ed0aafa49d107227"),
                _m30k("val", "fr", 73924, "5304e444d842e962b2dda4d816b70b22a1765b15401642b7ca37a67477e708dc"),
                _m30k("test_2016_flickr", "de", 70649, "4be6b5b3236b79c25475c6bb829800a7ce559e9ba7a1f6c2394fe4d40be46d16"),
                _m30k("test_2016_flickr", "en", 62076, "399a4382932c1aadd3ceb9bef1008d388a64c76d4ae4e9d4728c6f4301cac182"),
                _m30k("test_2016_flickr", "fr", 72261, "cb3160d69b002bb638e66cc7612fcd56cb0af82eadc9c142dedc438afb885ef6"),
            ),
        ),
        Corpus(
            "wikitext-2",
            "pytorch/examples",
            ("77f55b912142e11fcfdf5b530231fb9c52f181e8", "main"),
            tuple(
                File(path, f"word_language_model/data/wikitext-2/{path.removesuffix('.gz')}", n, s)
                for path, n, s in (
                    ("train.txt.gz", 10797148, "9e9fa1ad55b1c2c95b08e37dd8e653f638fac2c6de904b79e813611eefbc985f"),
                    ("valid.txt", 1121681, "f0737ed31fc1329026e95cb8b98e19c2a182c39c240ab909dc31abf2f8af58e8"),
                    ("test.txt", 1256449, "d790b833ef8cf03a90db7bf1271b7520b83c45ce07ba3c1a9699df81e239eca0"),
                )
            ),
        ),
        Corpus(
            "scan",
            "brendenlake/SCAN",
            ("c4b756cbc010d75c912f16c42c8f15dc6b7e6c8f",),
            tuple(
                File(path, path, n, s, required=path != "LICENSE")
                for path, n, s in (
                    ("tasks.txt", 4080388, "d824c7d9e9149ba497e25f701981dac79954e04bf670d22e5c209f076ac6c89f"),
                    ("length_split/tasks_train_length.txt", 2723418, "b034212dc7cf87ce62f3a067dd6ad49c4d5cd18d51d615d13825516bcb1ebbc2"),
                    ("length_split/tasks_test_length.txt", 1356970, "0760752ed34a75116ae11dcc1ee17526b7500060da1366540730fa24894d7db3"),
                    ("add_prim_split/tasks_train_addprim_jump.txt", 2579619, "e3c78485692e028eed4205e1b8b3fd0e785ef2c12d45b5b89204dadf5b239e23"),
                    ("LICENSE", 1532, "5caff9408d400e1d9b271bf48b967154cdf6a37c16c965f91775da3af9291f67"),
                )
            ),
        ),
        Corpus(
            "cogs",
            "najoungkim/COGS",
            ("165a7b669eade971fa47bf568a2e51925360fed8",),
            tuple(
                File(path, up, n, s, required=path != "LICENSE")
                for path, up, n, s in (
                    ("train.tsv", "data/train.tsv", 4146574, "220b3804b562c0156ee986eff1bdd15c27e52142549362a64f57baf86e304c78"),
                    ("dev.tsv", "data/dev.tsv", 522121, "ab66388a309c7ac1ad210c781a6a0ce12281a9ef24619a12422a752cef61bc21"),
                    ("test.tsv", "data/test.tsv", 521111, "68f8e51e9f6d9cd22d64efe68dd21d7ea5ba327e9a2359481030161aea757035"),
                    ("gen.tsv.gz", "data/gen.tsv", 5532102, "d013d9eee0bafc153f8decc85f42814ac97260f84964d980e1e2b84577b82361"),
                    ("gen_cases_to_paper_sections.json", "data/gen_cases_to_paper_sections.json", 2428, "d41606ea764176682c26012a98ab73f143b042a57ce4159de8120d69f60921f5"),
                    ("LICENSE", "LICENSE", 1067, "fad4a0b4259dd9f0fd6ce2b472541493bac2fb6e6f5fafee9fab7ec8f31aee4d"),
                )
            ),
        ),
    )
}
# fmt: on


# --------------------------------------------------------------------------------------------
# Resolution.


def candidates(environ=None, shared=SHARED, local=LOCAL):
    """The folders looked in, in order: $FAIRSEQ_PLUGINS_DATA alone when set, else
    ../shared/data beside the checkout, then ./corpora inside it."""
    environ = os.environ if environ is None else environ
    if environ.get(DATA_ENV):
        return [Path(environ[DATA_ENV]).expanduser()]
    return [Path(shared), Path(local)]


def missing_files(folder, name):
    """Required files of corpus NAME absent from FOLDER (presence only; `verify` checks content).
    A corpus this module does not list (e.g. pcfg) only needs its folder."""
    folder = Path(folder)
    if name not in CORPORA:
        return [] if folder.is_dir() else [name]
    return [f.path for f in CORPORA[name].files if f.required and not (folder / f.path).is_file()]


def find(name, roots=None):
    """ROOT/NAME of the first candidate root that holds all of NAME's data files, else None."""
    for root in candidates() if roots is None else roots:
        if not missing_files(Path(root) / name, name):
            return Path(root) / name
    return None


def corpus_dir(name, roots=None):
    """Where NAME is, or, when no candidate holds it whole, where a message should point: the
    first candidate with a NAME folder, else the first existing root, else the fetch target."""
    roots = candidates() if roots is None else roots
    found = find(name, roots)
    if found is not None:
        return found
    for root in roots:
        if (Path(root) / name).is_dir():
            return Path(root) / name
    for root in roots:
        if Path(root).is_dir():
            return Path(root) / name
    return Path(roots[-1]) / name


def fetch_dest(environ=None):
    """Where get-corpora.sh writes: $FAIRSEQ_PLUGINS_DATA when set, else ./corpora."""
    environ = os.environ if environ is None else environ
    return Path(environ[DATA_ENV]).expanduser() if environ.get(DATA_ENV) else LOCAL


def _show(path):
    """PATH relative to the working directory when inside it, else absolute."""
    path = Path(os.path.abspath(path))
    return str(path.relative_to(Path.cwd())) if path.is_relative_to(Path.cwd()) else str(path)


def missing_message(names=None, roots=None, environ=None):
    """One line naming the corpora (of NAMES, default all) that are not found, where they were
    looked for and the command that fetches them; '' when none is missing."""
    environ = os.environ if environ is None else environ
    roots = candidates(environ) if roots is None else roots
    names = list(CORPORA) if names is None else names
    gone = []
    for name in names:
        if find(name, roots) is None:
            where = corpus_dir(name, roots)
            lack = missing_files(where, name)
            required = [f for f in CORPORA[name].files if f.required] if name in CORPORA else []
            partial = where.is_dir() and len(lack) < len(required)
            gone.append(f"{name} ({_show(where)} lacks {', '.join(lack)})" if partial else name)
    if not gone:
        return ""
    looked = ", ".join(_show(r) for r in roots)
    looked += f" = ${DATA_ENV}" if environ.get(DATA_ENV) else f"; ${DATA_ENV} unset"
    return (
        f"corpora missing: {'; '.join(gone)} (looked in {looked}); "
        f"fetch them with `{FETCH_CMD}` or set {DATA_ENV}=DIR"
    )


# --------------------------------------------------------------------------------------------
# Checking and fetching.


def content_digest(path):
    """(bytes, sha256 hex) of PATH's content, unpacked when it ends in .gz."""
    digest, size = hashlib.sha256(), 0
    with (gzip.open if str(path).endswith(".gz") else open)(path, "rb") as fh:
        while chunk := fh.read(1 << 20):
            digest.update(chunk)
            size += len(chunk)
    return size, digest.hexdigest()


def verify(path, f):
    """True when PATH holds exactly F's content."""
    try:
        return Path(path).is_file() and content_digest(path) == (f.size, f.sha256)
    except (OSError, EOFError, gzip.BadGzipFile):
        return False


def urls(corpus, f, base=None):
    base = (base or os.environ.get(URL_ENV) or RAW_HOST).rstrip("/")
    return [f"{base}/{corpus.repo}/{ref}/{f.upstream}" for ref in corpus.refs]


def _download(url, target, timeout):
    req = urllib.request.Request(url, headers={"User-Agent": "fairseq-plugins-get-corpora"})
    with urllib.request.urlopen(req, timeout=timeout) as r, open(target, "wb") as out:
        while chunk := r.read(1 << 20):
            out.write(chunk)


def _store(part, target, f):
    """PART (as downloaded) -> TARGET, gzip-compressed when F is stored .gz but served plain."""
    if f.path.endswith(".gz") and not f.upstream.endswith(".gz"):
        packed = part.with_name(part.name + ".gz")
        with open(part, "rb") as src, open(packed, "wb") as raw:
            with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as out:
                while chunk := src.read(1 << 20):
                    out.write(chunk)
        part.unlink()
        part = packed
    os.replace(part, target)


def fetch_corpus(corpus, dest, base=None, timeout=TIMEOUT, dead=None):
    """Fetch CORPUS's files into DEST/NAME, skipping those present and verified.
    Returns (fetched, kept, failed, reason): lists of paths, and the first failure's reason.
    DEAD maps a host found unreachable to why, so that a run tries each host once."""
    dead = {} if dead is None else dead
    folder = Path(dest) / corpus.name
    fetched, kept, failed, reason = [], [], [], ""
    for f in corpus.files:
        target = folder / f.path
        if verify(target, f):
            kept.append(f.path)
            continue
        why = ""
        for url in urls(corpus, f, base):
            host = "{0.scheme}://{0.netloc}".format(urllib.parse.urlsplit(url))
            if host in dead:
                why = dead[host]
                break
            target.parent.mkdir(parents=True, exist_ok=True)
            part = target.with_name(target.name + ".part")
            try:
                _download(url, part, timeout)
            except urllib.error.HTTPError as e:
                part.unlink(missing_ok=True)
                why = f"{url}: HTTP {e.code}"
                continue
            except (urllib.error.URLError, OSError, ValueError) as e:
                part.unlink(missing_ok=True)
                why = dead[host] = f"{host} unreachable ({getattr(e, 'reason', e)})"
                break
            _store(part, target, f)
            if verify(target, f):
                fetched.append(f.path)
                why = ""
                break
            target.unlink()
            why = f"{url}: wrong size or sha256"
        if why:
            failed.append(f.path)
            reason = reason or why
    for sub in sorted(folder.rglob("*"), reverse=True) + [folder]:  # leave no empty folders
        if sub.is_dir() and not any(sub.iterdir()):
            sub.rmdir()
    return fetched, kept, failed, reason


def _hand_hint(corpus, failed):
    """Which upstream files to put in place by hand, and where they come from."""
    files = [f for f in corpus.files if f.path in failed]
    top = os.path.commonpath([os.path.dirname(f.upstream) or "." for f in files])
    top = "" if top == "." else top
    parts = []
    for f in files:
        up = os.path.relpath(f.upstream, top or ".")
        if f.path.endswith(".gz") and not up.endswith(".gz"):
            parts.append(f"{f.path} ({up} gzipped)")
        else:
            parts.append(f.path if up == f.path else f"{f.path} (= {up})")
    tree = f"https://github.com/{corpus.repo}/tree/{corpus.refs[0]}" + (f"/{top}" if top else "")
    return f"{', '.join(parts)} from {tree}"


def fetch(names=None, dest=None, base=None, timeout=TIMEOUT, prog="get-corpora.sh", out=None):
    """Fetch the corpora NAMES (default all) into DEST (default `fetch_dest()`); one line per
    corpus on OUT (stderr). Without an explicit DEST a corpus already found elsewhere (e.g.
    ../shared/data) is left alone. Returns 0 when every corpus is complete, else 1."""
    out = sys.stderr if out is None else out
    explicit = dest is not None
    dest = Path(dest) if explicit else fetch_dest()
    dead, status = {}, 0
    for name in names or list(CORPORA):
        corpus = CORPORA[name]
        found = None if explicit else find(name)
        if found is not None and found != dest / name:
            print(f"{prog}: {name}: found in {_show(found)}, nothing to fetch", file=out)
            continue
        fetched, kept, failed, reason = fetch_corpus(corpus, dest, base, timeout, dead)
        where = _show(dest / name)
        if failed:
            status = 1
            print(
                f"{prog}: {name}: could not fetch {len(failed)} of {len(corpus.files)} files "
                f"({reason}); put {_hand_hint(corpus, failed)} into {where} by hand",
                file=out,
            )
        elif fetched:
            print(f"{prog}: {name}: fetched {len(fetched)} files into {where} (checked)", file=out)
        else:
            print(
                f"{prog}: {name}: all {len(kept)} files present and verified in {where}", file=out
            )
    return status


# --------------------------------------------------------------------------------------------
# Command line (scripts/get-corpora.sh and the shell scripts call this).


def main(argv=None):
    prog, argv = called_as(sys.argv[1:] if argv is None else argv, "corpora.py")
    p = OneLineParser(
        prog=prog, description="Find (path, check) or fetch the real corpora (module docstring)."
    )
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser(
        "path", prog=prog, help="print the folder of corpus NAME; exit 1 when not found"
    )
    s.add_argument("name", choices=list(CORPORA) + ["pcfg"], metavar="NAME")
    s.add_argument("--fetch", action="store_true", help="fetch it first when not found")
    s = sub.add_parser(
        "check", prog=prog, help="exit 1 (one line on stderr) when a corpus is not found"
    )
    s.add_argument("names", nargs="*", metavar="NAME", help=f"some of {', '.join(CORPORA)}")
    s = sub.add_parser("fetch", prog=prog, help="download and verify (scripts/get-corpora.sh)")
    s.add_argument("names", nargs="*", metavar="NAME", help=f"some of {', '.join(CORPORA)}")
    s.add_argument("--dest", type=Path, help=f"target folder (default ${DATA_ENV} or ./corpora)")
    s.add_argument("--timeout", type=float, default=TIMEOUT, help="seconds per connection")
    args = p.parse_args(argv)
    for name in getattr(args, "names", []):
        if name not in CORPORA:
            p.error(f"unknown corpus '{name}' (one of {', '.join(CORPORA)})")

    if args.cmd == "path":
        fetched = None
        if find(args.name) is None and args.fetch and args.name in CORPORA:
            fetched = fetch([args.name], prog=prog)  # says what is missing when it fails
        found = find(args.name)
        if found is None:
            if fetched is None:
                print(f"{prog}: {missing_message([args.name])}", file=sys.stderr)
            return 1
        print(found)
        return 0
    if args.cmd == "check":
        message = missing_message(args.names or None)
        if message:
            print(f"{prog}: {message}", file=sys.stderr)
            return 1
        return 0
    if args.dest is not None and args.dest.exists() and not args.dest.is_dir():
        p.error(f"--dest {args.dest}: not a directory")
    if args.timeout <= 0:
        p.error(f"--timeout {args.timeout}: must be positive")
    return fetch(args.names, args.dest, timeout=args.timeout, prog=prog)


if __name__ == "__main__":
    sys.exit(main())
