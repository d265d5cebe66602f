from lerobot.policies.random.configuration_random import RandomConfig  # noqa: F401
