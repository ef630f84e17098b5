"""Shared test set-up: tests marked ``gpu`` are skipped when no CUDA GPU (CuPy) is present; every
test's random draws come from a seed that is printed when it fails (``seeding``), and
``ZKGPU_TEST_SEED=<n>`` replays them."""

from __future__ import annotations

import pytest

import seeding
from zkgpu.analysis import keynumbers, replay
from zkgpu.app import settings
from zkgpu.core import errors, manifest
from zkgpu.core.cuda import gpu_available
from zkgpu.groth16 import circuits
from zkgpu.pipeline import trace


def pytest_configure(config):
    """The ZKGPU_* variables of the shell (e.g. ZKGPU_NODE set by scripts/gpu_run.sh), as the
    command entry points read them (zkgpu.app.settings); an xdist worker takes the controller's
    session seed, so the header's seed replays every worker's draws."""
    settings.apply()
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None:
        seeding.SESSION_SEED = workerinput["zkgpu_session_seed"]


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    """xdist (controller): hand the session seed to each worker."""
    node.workerinput["zkgpu_session_seed"] = seeding.SESSION_SEED


@pytest.fixture
def restore_settings(monkeypatch):
    """Tests that call ``settings.apply`` / a ``configure()`` get the process-wide settings back afterwards."""
    monkeypatch.setattr(errors, "_DEBUG", errors._DEBUG)
    monkeypatch.setattr(trace, "_NVTX_ON", trace._NVTX_ON)
    monkeypatch.setattr(manifest, "_SETTINGS", dict(manifest._SETTINGS))
    monkeypatch.setattr(circuits, "_NODE", dict(circuits._NODE))


def pytest_collection_modifyitems(config, items):
    if gpu_available():
        return
    skip = pytest.mark.skip(reason="no CUDA GPU (CuPy) available")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


def pytest_report_header(config):
    return f"random inputs: ZKGPU_TEST_SEED={seeding.SESSION_SEED} (export it to replay this session's draws)"


@pytest.fixture(autouse=True)
def test_seed(request) -> int:
    """The running test's seed (from the session seed and the test id); draws of ``rng``,
    ``pyrng``, ``seeding.new_rng()`` and ``seeding.new_pyrng()`` all come from it."""
    seed = seeding.seed_for(request.node.nodeid)
    seeding.start(seed)
    request.node.zkgpu_seed = seed
    return seed


@pytest.fixture(autouse=True)
def _library_settings():
    """Each test starts and ends with the library's default data folder and no key-numbers folder
    (``zkgpu.app.live.open_source`` configures both from the environment a test may set)."""
    replay.configure(data_dir=None)
    keynumbers.configure(out_dir=None)
    yield
    replay.configure(data_dir=None)
    keynumbers.configure(out_dir=None)


@pytest.fixture
def rng(test_seed):
    """The test's numpy Generator."""
    return seeding.new_rng()


@pytest.fixture
def pyrng(test_seed):
    """The test's ``random.Random`` (Python-int draws)."""
    return seeding.new_pyrng()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    seed = getattr(item, "zkgpu_seed", None)
    if rep.failed and seed is not None:
        rep.sections.append(("random seed", f"session seed ZKGPU_TEST_SEED={seeding.SESSION_SEED} (this test's own seed, {seed}, is derived from it and the test id); "
                                            f"replay with: ZKGPU_TEST_SEED={seeding.SESSION_SEED} python -m pytest '{item.nodeid}'"))
