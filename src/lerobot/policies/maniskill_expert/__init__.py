from lerobot.policies.maniskill_expert.configuration_maniskill_expert import (  # noqa: F401
    ManiskillExpertConfig,
)
