from lerobot.policies.websocket.configuration_websocket import WebsocketConfig  # noqa: F401
