"""Following the change: the table of what each implementation file serves, ``--focus``, ``--since`` and the hash
memory in the corpus."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from fuzz.backends.registry import REGISTRY
from fuzz.campaign import memory
from fuzz.campaign.focus import (
    SERVES,
    Focus,
    NoFocus,
    focus_of_files,
    implementation_files,
    parse_focus,
    served_by,
    within,
)
from fuzz.cli import main
from fuzz.engine.properties import PROPERTIES
from fuzz.model.ops import ALL_OPS

ROOT = Path(__file__).resolve().parents[2]
CONV, LA = "CausalConvWithState", "LinearAttention"
CAPABILITIES = {"oracle": {"ops": [LA, CONV]}, "wgpu-conv": {"ops": [CONV]}, "wgpu": {"ops": [LA]},
                "wgpu-chunked": {"ops": [LA]}}


def test_every_implementation_file_is_in_the_table() -> None:
    files = implementation_files(ROOT)
    assert "kernels/chunked.wgsl" in files and "fuzz/backends/ort_cpu.py" in files
    unmapped = [path for path in files if served_by(path) is None]
    assert not unmapped, f"add these to SERVES in fuzz/campaign/focus.py: {unmapped}"


def test_the_table_names_only_backends_ops_and_properties_that_exist() -> None:
    for _, serves in SERVES:
        assert set(serves.backends) <= set(REGISTRY)
        assert set(serves.ops) <= set(ALL_OPS)
        assert set(serves.properties) <= set(PROPERTIES)


def test_changed_files_give_what_they_serve() -> None:
    focus = focus_of_files(["kernels/chunked.wgsl", "docs/campaign.md", "tests/engine/test_mutants.py"])
    assert (focus.backends, focus.ops, focus.changed) == (("wgpu-chunked",), (LA,), ("kernels/chunked.wgsl",))
    assert focus.long, "the chunked prefill changes chunk after chunk: half the focused units take long calls"
    conv = focus_of_files(["kernels/causal_conv.wgsl", "kernels/qkv_split.wgsl"])
    assert conv.backends == ("wgpu-conv", "wgpu-conv-dawn", "wgpu-conv-swiftshader", "wgpu-conv-browser", "wgpu",
                             "wgpu-dawn")
    assert conv.ops == (CONV,)
    assert conv.properties == ("hybrid-block",)
    assert focus_of_files(["oracles/recurrence.py"]) == Focus((), (LA,), (), changed=("oracles/recurrence.py",))


@pytest.mark.parametrize(("files", "why"), [
    (["kernels/new_kernel.wgsl"], "is not in the table"),
    (["kernels/chunked.wgsl", "fuzz/backends/base.py"], "serves every backend"),
    (["README.md"], "no implementation file changed"),
    (["kernels/timing.py"], "serves nothing a campaign runs"),
])
def test_a_change_without_a_focus_says_why(files: list[str], why: str) -> None:
    with pytest.raises(NoFocus, match=why):
        focus_of_files(files)


def test_focus_names_backends_ops_and_properties() -> None:
    focus = parse_focus("wgpu-conv, LinearAttention,hybrid-block", list(PROPERTIES))
    assert (focus.backends, focus.ops, focus.properties) == (("wgpu-conv",), (LA,), ("hybrid-block",))
    assert focus.long and not parse_focus("wgpu-dawn", list(PROPERTIES)).long
    with pytest.raises(ValueError, match=r"unknown name.*wgpu-nope"):
        parse_focus("wgpu-conv,wgpu-nope", list(PROPERTIES))


def test_a_focused_unit_runs_the_focused_backends_their_partners_and_the_oracle() -> None:
    assert Focus(("wgpu-conv",)).runs() == {"oracle", "wgpu-conv", "wgpu"}
    assert Focus((), (LA,)).runs() is None


def test_a_focus_is_kept_to_what_the_campaign_runs() -> None:
    focus = within(Focus(("wgpu-conv", "ort-cuda")), CAPABILITIES, [LA, CONV], list(PROPERTIES))
    assert (focus.backends, focus.ops) == (("wgpu-conv",), (CONV,))
    with pytest.raises(NoFocus, match="not among"):
        within(Focus(("ort-cuda",)), CAPABILITIES, [LA, CONV], list(PROPERTIES))
    with pytest.raises(NoFocus, match="none of this campaign's ops"):
        within(Focus(("wgpu-conv",)), CAPABILITIES, [LA], list(PROPERTIES))
    with pytest.raises(NoFocus, match="properties"):
        within(Focus((), (LA,), ("hybrid-block",)), CAPABILITIES, [LA, CONV], ["hybrid-block"])


@pytest.mark.slow
def test_bad_focus_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["campaign", "--examples", "1", "--backends", "oracle", "--out", str(tmp_path / "out")]
    assert main([*argv, "--focus", "wgpu-nope"]) == 2
    assert "unknown name(s) wgpu-nope" in capsys.readouterr().err
    assert main([*argv, "--focus", "wgpu", "--since", "HEAD"]) == 2
    assert "give one of them" in capsys.readouterr().err


def _tree(root: Path, chunked: str = "chunk") -> None:
    for path, text in {"kernels/chunked.wgsl": chunked, "kernels/causal_conv.wgsl": "conv",
                       "oracles/prefix.py": "", "docs/notes.md": "notes"}.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)


def test_since_a_revision_takes_committed_uncommitted_and_untracked_changes(tmp_path: Path) -> None:
    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(tmp_path), *args], check=True, capture_output=True)

    _tree(tmp_path)
    git("init", "-q")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "empty")
    git("add", "-A")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "tree")
    assert memory.changed_since("HEAD", tmp_path) == []
    (tmp_path / "kernels/causal_conv.wgsl").write_text("conv, edited")
    (tmp_path / "oracles/new.py").write_text("")
    assert memory.changed_since("HEAD", tmp_path) == ["kernels/causal_conv.wgsl", "oracles/new.py"]
    assert "kernels/chunked.wgsl" in memory.changed_since("HEAD~1", tmp_path)
    with pytest.raises(ValueError, match="no-such-rev"):
        memory.changed_since("no-such-rev", tmp_path)


def test_the_corpus_remembers_the_implementation(tmp_path: Path) -> None:
    tree, corpus = tmp_path / "tree", tmp_path / "corpus"
    _tree(tree)
    corpus.mkdir()
    with pytest.raises(memory.Unreadable, match="does not exist"):
        memory.recorded(corpus)
    before = memory.hashes(tree)
    assert sorted(before) == ["kernels/causal_conv.wgsl", "kernels/chunked.wgsl", "oracles/prefix.py"]
    assert memory.record(corpus, before) and not memory.record(corpus, before)
    assert memory.recorded(corpus) == before
    _tree(tree, chunked="chunk, edited")
    assert memory.changed(memory.recorded(corpus), memory.hashes(tree)) == ["kernels/chunked.wgsl"]
    (corpus / memory.HASHES).write_text('{"format": "lafuzz-implementation-hashes/1", "files": {"a": 1}}')
    with pytest.raises(memory.Unreadable, match="not a record"):
        memory.recorded(corpus)
    (corpus / memory.HASHES).write_text("{truncated")
    with pytest.raises(memory.Unreadable, match="cannot be read"):
        memory.recorded(corpus)


def test_what_set_up_installs_in_a_checkout_is_not_the_implementation(tmp_path: Path) -> None:
    """``lafuzz setup`` puts the npm packages and copies of their lock in a checkout's ``ortjs/``: a fresh clone, set
    up, has changed nothing the campaign tests."""
    _tree(tmp_path)
    before = memory.hashes(tmp_path)
    for name in ("package.json", "package-lock.json", ".npmrc", "node_modules/onnxruntime-web/package.json"):
        (tmp_path / "ortjs" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "ortjs" / name).write_text("{}")
    assert memory.changed(before, memory.hashes(tmp_path)) == []


def _campaign(tmp_path: Path, corpus: Path, *more: str) -> int:
    return main(["campaign", "--examples", "2", "--examples-per-unit", "1", "-j", "1", "--seed", "5", "--backends",
                 "oracle", "--out", str(tmp_path / "out"), "--corpus", str(corpus), *more])


@pytest.mark.slow
def test_a_plain_campaign_leans_towards_what_changed_since_the_record(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    now = memory.hashes()
    memory.record(corpus, {**now, "oracles/causal_conv/convolution.py": "0" * 64})
    assert _campaign(tmp_path, corpus, "--properties", "backends-agree") == 0
    err = capsys.readouterr().err
    line = "[lafuzz] focus: oracles/causal_conv/convolution.py changed since the last clean campaign -> " + CONV
    assert line in err
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["config"]["focus"]["ops"] == [CONV]
    assert memory.recorded(corpus)["oracles/causal_conv/convolution.py"] == "0" * 64, "a partial campaign records"

    assert _campaign(tmp_path, corpus, "--focus", "none") == 0
    assert "focus" not in capsys.readouterr().err.replace("--focus", "")
    assert memory.recorded(corpus) == now, "a clean campaign of every property records the implementation"
    assert _campaign(tmp_path, corpus) == 0
    assert "[lafuzz] focus" not in capsys.readouterr().err, "nothing changed since the record"

    (corpus / memory.HASHES).write_text("not json")
    assert _campaign(tmp_path, corpus, "--properties", "backends-agree") == 0
    assert "[lafuzz] no focus: " + str(corpus / memory.HASHES) + " cannot be read" in capsys.readouterr().err
