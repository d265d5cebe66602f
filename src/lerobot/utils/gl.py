"""Headless rendering defaults."""

import os


def default_mujoco_gl() -> None:
    """Use EGL for MuJoCo when the user chose nothing.

    EGL renders offscreen with a GPU or, without one, with Mesa's software renderer; GLFW (MuJoCo's
    own default) needs a display, which servers and CI runners do not have. Must run before
    the first `import mujoco` anywhere, workers included (they inherit the environment).
    """
    os.environ.setdefault("MUJOCO_GL", "egl")
    if os.environ["MUJOCO_GL"] == "egl":
        os.environ.setdefault("PYOPENGL_PLATFORM", "egl")
