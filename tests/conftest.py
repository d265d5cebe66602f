import os

import pytest

# Headless rendering for every test, workers included (they inherit the environment).
os.environ.setdefault("MUJOCO_GL", "egl")
os.environ.setdefault("PYOPENGL_PLATFORM", "egl")


@pytest.fixture
def metaworld():
    """The real Meta-World package; tests that need it fail loudly when the extra is missing."""
    import metaworld as mw

    return mw
