import os

# Headless rendering for every test, workers included (they inherit the environment).
os.environ.setdefault("MUJOCO_GL", "egl")
os.environ.setdefault("PYOPENGL_PLATFORM", "egl")
# The same CPU arithmetic on every x86 machine, set before torch loads: LeRobot's fixtures were
# recorded on a CPU with AVX2 and no bfloat16 instructions, and on one with AVX-512 (and
# AVX512_BF16) torch's own kernels, MKL and oneDNN pick other code paths, whose different
# summation orders move float32 results by ~1e-4 and bfloat16 ones by ~1e-3: enough to fail
# the exact comparisons with LeRobot (and diffusion's rows-in-any-batch check) for reasons
# that have nothing to do with our code. Capped at AVX2, all three reproduce the fixtures.
os.environ.setdefault("ATEN_CPU_CAPABILITY", "avx2")
os.environ.setdefault("MKL_ENABLE_INSTRUCTIONS", "AVX2")
os.environ.setdefault("ONEDNN_MAX_CPU_ISA", "AVX2")
# Ray 2.60 turns token authentication on for a local `ray.init()` (writing a token to ~/.ray)
# and for a `ray start` that finds that token. A test process whose local Ray ran with it, then
# joining tests/ray_cluster.py's nodes (which run without), saw its actors cancelled before they
# started. One mode for every Ray process of the tests, and nothing written to ~/.ray.
os.environ.setdefault("RAY_AUTH_MODE", "disabled")

import pytest  # noqa: E402
import torch  # noqa: E402

# torch._dynamo imports triton, whose import segfaults in a process that already loaded a
# renderer (an EGL context, or pygame and its SDL libraries for PushT), as transformers does
# lazily on its first model. lerobot-eval builds the policy before any env; an xdist worker
# runs simulator and VLA tests in any order, so it imports dynamo here, first.
import torch._dynamo  # noqa: E402,F401


@pytest.fixture
def metaworld():
    """The real Meta-World package; tests that need it fail loudly when the extra is missing."""
    import metaworld as mw

    return mw


@pytest.fixture
def one_torch_thread():
    """Tiny test models on a 2-core machine: torch's thread pool makes their small ops ~50x
    slower than one thread does (65 s instead of 7 s for tests/policies)."""
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)


@pytest.fixture
def register_env_type():
    """Register a test-only EnvConfig subclass under a name for one test, then forget it, so
    other tests keep seeing only the real benchmarks in their `--env.type` choices."""
    from lerobot.configs.env import EnvConfig

    added: list[str] = []

    def register(name: str, cls: type) -> type:
        EnvConfig.register_subclass(name)(cls)
        added.append(name)
        return cls

    yield register
    for name in added:
        EnvConfig._choice_registry.pop(name, None)


@pytest.fixture
def echo_plugin(tmp_path, monkeypatch):
    """The echo benchmark of tests/plugin_packages.py (written for LeRobot: it builds its own
    envs and has env processors) imported as `--env.type=echo` for one test, then forgotten;
    the fixture's value is its folder, for a subprocess's PYTHONPATH."""
    import importlib
    import sys

    from lerobot.configs.env import EnvConfig
    from tests.plugin_packages import write_echo_plugin

    site = write_echo_plugin(tmp_path / "site")
    monkeypatch.syspath_prepend(str(site))
    sys.modules.pop("lerobot_env_echo", None)
    importlib.import_module("lerobot_env_echo")
    yield site
    EnvConfig._choice_registry.pop("echo", None)
    sys.modules.pop("lerobot_env_echo", None)


def pytest_collection_modifyitems(config, items):
    """Tests marked `docker` build and run a benchmark image (minutes, several GB): they run
    only when a `-m` expression names the marker (`pytest -m docker`), never in a plain
    `pytest -q` (.ci/run) or under another `-m` such as `-m "not slow"`."""
    if "docker" in (config.getoption("markexpr") or ""):
        return  # the expression decides, e.g. `-m docker` or `-m "not docker"`
    kept = [item for item in items if item.get_closest_marker("docker") is None]
    if len(kept) < len(items):
        config.hook.pytest_deselected(items=[item for item in items if item not in kept])
        items[:] = kept
