from lerobot.policies.act.configuration_act import ACTConfig  # noqa: F401
