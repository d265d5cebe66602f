from lerobot.policies.aloha_scripted.configuration_aloha_scripted import (  # noqa: F401
    AlohaScriptedConfig,
)
