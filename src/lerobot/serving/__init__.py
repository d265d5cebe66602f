"""`lerobot-serve-policy`: any policy we can load, served over openpi's WebSocket protocol."""
