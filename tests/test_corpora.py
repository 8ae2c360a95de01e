"""plugin_tools/corpora.py and scripts/get-corpora.sh: where the real corpora are looked for
($FAIRSEQ_PLUGINS_DATA > ../shared/data > ./corpora), fetching with checksums from a local HTTP
server, the one-line offline messages, and the skip (or, in CI, failure) of the tests that need
a missing corpus."""

import gzip
import hashlib
import http.server
import os
import shutil
import subprocess
import sys
import threading
import time

import pytest
from conftest import ROOT, corpora, run

GET = ROOT / "scripts" / "get-corpora.sh"
UNREACHABLE = "http://127.0.0.1:9"  # the discard port: connection refused at once


def make_corpus(root, name, skip=()):
    """Empty stand-ins for the required files of corpus NAME under ROOT/NAME."""
    for f in corpora.CORPORA[name].files:
        if f.required and f.path not in skip:
            path = root / name / f.path
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(b"")
    return root / name


def test_resolution_order(tmp_path):
    env_dir, shared, local = tmp_path / "env", tmp_path / "shared", tmp_path / "local"
    for root in (env_dir, shared, local):
        make_corpus(root, "scan")
    unset = corpora.candidates({}, shared, local)
    assert unset == [shared, local]
    assert corpora.candidates({corpora.DATA_ENV: ""}, shared, local) == unset  # empty = unset
    with_env = corpora.candidates({corpora.DATA_ENV: str(env_dir)}, shared, local)
    assert with_env == [env_dir]  # the variable wins, alone
    assert corpora.find("scan", with_env) == env_dir / "scan"
    assert corpora.find("scan", unset) == shared / "scan"  # ../shared/data before ./corpora
    shutil.rmtree(shared / "scan")
    assert corpora.find("scan", unset) == local / "scan"
    # a corpus counts where it is whole: a partial ../shared/data copy falls through
    make_corpus(shared, "scan", skip=("tasks.txt",))
    assert corpora.find("scan", unset) == local / "scan"
    shutil.rmtree(local / "scan")
    assert corpora.find("scan", unset) is None
    assert corpora.corpus_dir("scan", unset) == shared / "scan"  # messages point at the partial one
    shutil.rmtree(env_dir / "scan")
    assert corpora.find("scan", with_env) is None  # no fall-back when the variable is set
    # where get-corpora.sh writes, and the real defaults of a checkout
    assert corpora.fetch_dest({corpora.DATA_ENV: str(env_dir)}) == env_dir
    assert corpora.fetch_dest({}) == ROOT / "corpora"
    assert corpora.candidates({}) == [ROOT.parent / "shared" / "data", ROOT / "corpora"]
    assert "/corpora/" in (ROOT / ".gitignore").read_text().splitlines()


def test_missing_message_is_one_line(tmp_path):
    shared, local = tmp_path / "shared", tmp_path / "local"
    make_corpus(local, "multi30k")
    make_corpus(shared, "cogs", skip=("gen.tsv.gz",))
    roots = corpora.candidates({}, shared, local)
    message = corpora.missing_message(roots=roots, environ={})
    assert "\n" not in message and "multi30k" not in message.split("(looked")[0]
    assert message.startswith("corpora missing: wikitext-2; scan; cogs (")
    assert "lacks gen.tsv.gz" in message and "bash scripts/get-corpora.sh" in message
    assert corpora.DATA_ENV in message
    for name in ("wikitext-2", "scan", "cogs"):
        make_corpus(local, name)
    assert corpora.missing_message(roots=roots, environ={}) == ""


def test_cli_path_and_check(tmp_path):
    env = {corpora.DATA_ENV: str(tmp_path), corpora.URL_ENV: UNREACHABLE}
    script = ROOT / "plugin_tools" / "corpora.py"
    make_corpus(tmp_path, "scan")
    proc = run([sys.executable, script, "path", "scan"], env=env)
    assert proc.stdout.strip() == str(tmp_path / "scan")
    proc = run([sys.executable, script, "path", "cogs"], env=env, check=False)
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and "corpora missing: cogs" in proc.stderr
    proc = run([sys.executable, script, "check", "scan"], env=env)
    proc = run([sys.executable, script, "check"], env=env, check=False)
    assert proc.returncode == 1 and "multi30k; wikitext-2; cogs" in proc.stderr
    proc = run([sys.executable, script, "check", "bogus"], env=env, check=False)
    assert proc.returncode == 2 and proc.stderr.strip().count("\n") == 0
    assert "unknown corpus 'bogus'" in proc.stderr


def test_get_corpora_offline_says_one_line_per_corpus(tmp_path):
    env = {corpora.URL_ENV: UNREACHABLE}
    start = time.monotonic()
    proc = run(["bash", GET, "--dest", tmp_path, "--timeout", "5"], env=env, check=False)
    assert time.monotonic() - start < 20
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == len(corpora.CORPORA), proc.stderr
    for line, name in zip(lines, corpora.CORPORA):
        assert line.startswith(f"get-corpora.sh: {name}: could not fetch "), line
        assert "127.0.0.1:9 unreachable" in line
        assert f"into {tmp_path / name} by hand" in line and "https://github.com/" in line
    assert not list(tmp_path.iterdir())  # no empty folders left behind
    proc = run(["bash", GET, "--dest", tmp_path, "wikitext-2"], env=env, check=False)
    assert proc.returncode == 1
    [line] = proc.stderr.strip().splitlines()
    assert "train.txt.gz (train.txt gzipped), valid.txt, test.txt from" in line


@pytest.mark.parametrize(
    "args, named",
    [
        (["bogus"], "bogus"),
        (["--dest"], "--dest"),
        (["--timeout", "0"], "--timeout"),
        (["--frobnicate"], "--frobnicate"),
    ],
)
def test_get_corpora_bad_input(args, named):
    proc = run(["bash", GET, *args], check=False)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and named in lines[0], proc.stderr


def test_get_corpora_help():
    assert run(["bash", GET, "--help"]).stdout.startswith("Usage:")
    assert run(["bash", GET, "scan", "-h"]).stdout.startswith("Usage:")


class Server:
    """A local stand-in for raw.githubusercontent.com serving the files under ROOT."""

    def __init__(self, root):
        handler = lambda *a, **k: http.server.SimpleHTTPRequestHandler(  # noqa: E731
            *a, directory=str(root), **k
        )
        handler.log_message = lambda *a: None
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


def entry(path, upstream, content, required=True):
    return corpora.File(path, upstream, len(content), hashlib.sha256(content).hexdigest(), required)


def test_fetch_gzips_verifies_falls_back_and_skips(tmp_path):
    texts = {"a.txt": b"alpha\n", "d/b.txt": b"beta\n" * 100, "c.gz": b"gamma\n"}
    toy = corpora.Corpus(
        "toy",
        "owner/repo",
        ("0123abc", "main"),  # the pinned commit is absent here: the branch is the fall-back
        (
            entry("a.txt", "a.txt", texts["a.txt"]),
            entry("b.txt.gz", "d/b.txt", texts["d/b.txt"]),  # served plain, stored gzipped
            entry("c.gz", "c.gz", texts["c.gz"], required=False),  # served gzipped, kept as is
        ),
    )
    served = tmp_path / "srv" / "owner" / "repo" / "main"
    (served / "d").mkdir(parents=True)
    (served / "a.txt").write_bytes(texts["a.txt"])
    (served / "d" / "b.txt").write_bytes(texts["d/b.txt"])
    (served / "c.gz").write_bytes(gzip.compress(texts["c.gz"]))
    dest = tmp_path / "dest"
    with Server(tmp_path / "srv") as server:
        fetched, kept, failed, why = corpora.fetch_corpus(toy, dest, base=server.url, timeout=5)
        assert (fetched, kept, failed, why) == (["a.txt", "b.txt.gz", "c.gz"], [], [], "")
        assert gzip.decompress((dest / "toy" / "b.txt.gz").read_bytes()) == texts["d/b.txt"]
        assert not list((dest / "toy").rglob("*.part*"))
        # idempotent: present and verified files are not downloaded again
        assert corpora.fetch_corpus(toy, dest, base=server.url)[:2] == (
            [],
            ["a.txt", "b.txt.gz", "c.gz"],
        )
        # a damaged file is fetched again; a wrong upstream file is refused and removed
        (dest / "toy" / "a.txt").write_bytes(b"alpha!\n")
        (served / "d" / "b.txt").write_bytes(b"changed upstream\n")
        (dest / "toy" / "b.txt.gz").unlink()
        fetched, kept, failed, why = corpora.fetch_corpus(toy, dest, base=server.url)
        assert fetched == ["a.txt"] and kept == ["c.gz"] and failed == ["b.txt.gz"]
        assert "wrong size or sha256" in why and not (dest / "toy" / "b.txt.gz").exists()
        (served / "a.txt").unlink()
        (dest / "toy" / "a.txt").unlink()
        fetched, kept, failed, why = corpora.fetch_corpus(toy, dest, base=server.url)
        assert failed == ["a.txt", "b.txt.gz"] and "HTTP 404" in why


def test_get_corpora_fetches_cogs_from_a_mirror(cogs_data, tmp_path):
    """The real manifest end to end: a mirror laid out like raw.githubusercontent.com."""
    cogs = corpora.CORPORA["cogs"]
    served = tmp_path / "srv" / cogs.repo / cogs.refs[0]
    for f in cogs.files:
        (served / f.upstream).parent.mkdir(parents=True, exist_ok=True)
        if f.path.endswith(".gz") and not f.upstream.endswith(".gz"):
            with gzip.open(cogs_data / f.path, "rb") as src:
                (served / f.upstream).write_bytes(src.read())
        else:
            shutil.copy(cogs_data / f.path, served / f.upstream)
    dest = tmp_path / "dest"
    with Server(tmp_path / "srv") as server:
        env = {corpora.URL_ENV: server.url}
        proc = run(["bash", GET, "--dest", dest, "cogs"], env=env)
        assert (
            proc.stderr.strip()
            == f"get-corpora.sh: cogs: fetched 6 files into {dest / 'cogs'} (checked)"
        )
        assert (dest / "cogs" / "train.tsv").read_bytes() == (cogs_data / "train.tsv").read_bytes()
        proc = run(["bash", GET, "--dest", dest, "cogs"], env={corpora.URL_ENV: UNREACHABLE})
        assert "all 6 files present and verified" in proc.stderr
    # the same folder as $FAIRSEQ_PLUGINS_DATA is what every tool then finds
    proc = run(
        [sys.executable, ROOT / "plugin_tools" / "corpora.py", "path", "cogs"],
        env={corpora.DATA_ENV: str(dest)},
    )
    assert proc.stdout.strip() == str(dest / "cogs")


def corpus_tests(env):
    """Two SCAN/COGS tests of test_compgen_data.py in a child pytest, corpora where ENV says."""
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
        + ["tests/test_compgen_data.py::test_cogs", "tests/test_compgen_data.py::test_scan_length"],
        cwd=ROOT,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_missing_corpora_skip_with_one_line_or_fail_in_ci(tmp_path):
    env = {corpora.DATA_ENV: str(tmp_path / "none"), corpora.REQUIRE_ENV: ""}
    proc = corpus_tests(env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = [line for line in proc.stdout.splitlines() if "corpora missing" in line]
    assert len(lines) == 1, proc.stdout
    assert "multi30k; wikitext-2; scan; cogs" in lines[0] and "scripts/get-corpora.sh" in lines[0]
    assert " skipped" in proc.stdout.splitlines()[-1] and "passed" not in proc.stdout
    proc = corpus_tests({**env, corpora.REQUIRE_ENV: "1"})
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "skipped" not in proc.stdout.splitlines()[-1]
    assert "corpora missing" in proc.stdout and corpora.REQUIRE_ENV in proc.stdout
