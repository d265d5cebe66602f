from lerobot.policies.pi05.configuration_pi05 import PI05Config  # noqa: F401
