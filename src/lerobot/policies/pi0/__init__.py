from lerobot.policies.pi0.configuration_pi0 import PI0Config  # noqa: F401
