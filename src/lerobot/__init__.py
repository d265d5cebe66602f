"""lerobot: fast, reliable and reproducible evaluation of robot policies in simulation."""

__version__ = "0.1.0"
