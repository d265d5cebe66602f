from lerobot.policies.robomimic_expert.configuration_robomimic_expert import (  # noqa: F401
    RobomimicExpertConfig,
)
