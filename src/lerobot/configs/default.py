"""LeRobot's module path for `EvalConfig`; it lives in `lerobot.configs.eval`."""

from lerobot.configs.eval import EvalConfig

__all__ = ["EvalConfig"]
