from lerobot.policies.metaworld_expert.configuration_metaworld_expert import (  # noqa: F401
    MetaworldExpertConfig,
)
