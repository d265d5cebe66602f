from lerobot.policies.smolvla.configuration_smolvla import SmolVLAConfig  # noqa: F401
