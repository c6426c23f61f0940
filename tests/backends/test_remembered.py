"""What a probe remembers between campaigns: used only while its fingerprint and age hold, never for tests' fakes,
forgotten when a worker cannot start the backend; a probe that recalls a backend does not create it."""

from __future__ import annotations

import json

import pytest

from fuzz.backends import remembered
from fuzz.backends.remembered import Remembered
from fuzz.campaign import worker
from fuzz.campaign.worker import Worker, probe

CAPS = {"device": "a device", "ops": ["LinearAttention"]}


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("LAFUZZ_CACHE_DIR", str(tmp_path))
    return tmp_path


def test_recalls_what_it_remembered_while_the_fingerprint_and_age_hold(cache, monkeypatch):
    Remembered().remember({"wgpu": ("wgpu", CAPS), "tests.fake:Backend": ("fake", CAPS)})
    assert json.loads((cache / remembered.FILE).read_text()).keys() == {"wgpu"}, "a module:Class spec was kept"
    assert Remembered().recall("wgpu") == ("wgpu", CAPS)
    assert Remembered().recall("wgpu-dawn") is None
    later = Remembered().entries["wgpu"]["probed"] + remembered.MAX_AGE_S + 1
    assert Remembered().recall("wgpu", now=later) is None, "an entry older than a day was used"
    monkeypatch.setenv("LAFUZZ_DEVICE", "1")  # another device chosen: what was probed on the first does not hold
    assert Remembered().recall("wgpu") is None


def test_the_backends_code_is_in_the_fingerprint(tmp_path):
    (tmp_path / "fuzz" / "backends").mkdir(parents=True)
    (tmp_path / "fuzz" / "backends" / "wgpu_kernel.py").write_text("ops = ('LinearAttention',)\n")
    before = remembered.code_digest(tmp_path)
    (tmp_path / "kernels").mkdir()
    (tmp_path / "kernels" / "linear_attention.wgsl").write_text("fn main() {}\n")
    assert remembered.code_digest(tmp_path) == before, "a kernel's WGSL changed what a backend can do"
    (tmp_path / "fuzz" / "backends" / "wgpu_kernel.py").write_text("ops = ('CausalConvWithState',)\n")
    assert remembered.code_digest(tmp_path) != before


def test_a_recalled_backend_is_not_created_and_the_others_are_remembered(cache, monkeypatch):
    Remembered().remember({"wgpu": ("wgpu", CAPS)})
    created: list[list[str]] = []
    real = worker.create_side_by_side

    def counting(specs):
        created.append(list(specs))
        return real(specs)

    monkeypatch.setattr(worker, "create_side_by_side", counting)
    found = probe(["oracle", "wgpu"], Remembered())
    assert created == [["oracle"]]
    assert found.usable == ["oracle", "wgpu"] and found.recalled == {"wgpu": "wgpu"}
    assert found.described["wgpu"] == CAPS
    assert Remembered().recall("oracle") is not None, "what was probed now was not remembered"
    Remembered().forget(["wgpu"])
    assert Remembered().recall("wgpu") is None and Remembered().recall("oracle") is not None


def test_a_worker_lists_a_backend_it_cannot_create_as_lost(tmp_path, monkeypatch):
    """A backend remembered as available that is missing now: the worker runs without it and says so."""
    from fuzz.campaign.campaign import CampaignConfig

    config = CampaignConfig(properties=["backends-agree"], backends=["oracle", "ort-webgpu-builtin"],
                            out=tmp_path, known_corpus=None)

    def created(specs, **_):
        return [worker.create(s) if s == "oracle" else worker.Unavailable("gone") for s in specs]

    monkeypatch.setattr(worker, "create_side_by_side", created)
    made = Worker(config)
    assert [b.name for b in made.usable("backends-agree")] == ["oracle"]
    assert "gone" in made.lost["ort-webgpu-builtin"]


def test_the_campaign_command_probes_once_then_recalls(cache, tmp_path, capsys):
    from fuzz.cli import main

    args = ["campaign", "--backends", "oracle,ort-cpu", "--examples", "2", "--jobs", "1", "--seed", "1"]
    main([*args, "--out", str(tmp_path / "first")])
    assert "as probed" not in capsys.readouterr().err
    main([*args, "--out", str(tmp_path / "second")])
    assert "2 backend(s) as probed" in capsys.readouterr().err
