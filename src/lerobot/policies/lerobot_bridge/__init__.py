from lerobot.policies.lerobot_bridge.configuration_lerobot_bridge import LeRobotBridgeConfig  # noqa: F401
