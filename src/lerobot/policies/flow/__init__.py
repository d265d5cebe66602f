"""What the flow-matching VLAs (SmolVLA, π0, π0.5) share: the flow-matching arithmetic and
per-row noise (`matching`), sampling and the loss around a VLM with its action expert
(`network`), the policy base that samples action chunks row by row and streams checkpoints
onto the device (`sampling_policy`), the config mixin for their cameras, chunk and presets
(`vla_config`), and reading multi-GB safetensors straight into device storage
(`streaming_weights`)."""
