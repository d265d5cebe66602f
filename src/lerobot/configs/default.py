"""LeRobot's module path for `EvalConfig`; it lives in `lerobot.configs.eval`."""

from lerobot.configs.eval import EvalConfig
from lerobot.utils.not_in_this_build import refused_names

__all__ = ["EvalConfig"]


__getattr__ = refused_names(__name__)  # LeRobot's names this module lacks, refused on use
