from lerobot.policies.diffusion.configuration_diffusion import DiffusionConfig  # noqa: F401
