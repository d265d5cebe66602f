"""What the flow-matching VLAs (SmolVLA, π0, π0.5) share: the flow-matching arithmetic and
per-row noise (`matching`), the policy base that samples action chunks row by row
(`sampling_policy`), the config mixin for their cameras and presets (`vla_config`), and
loading multi-GB safetensors straight to the device (`streaming_weights`)."""
