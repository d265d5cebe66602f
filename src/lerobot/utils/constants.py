"""Batch keys shared by envs, processors and policies (LeRobot's naming, so checkpoints load unchanged)."""

OBS_PREFIX = "observation"
OBS_STATE = "observation.state"
OBS_ENV_STATE = "observation.environment_state"
OBS_IMAGE = "observation.image"
OBS_IMAGES = "observation.images"
ACTION = "action"
# Training batches: which steps of an action chunk lie past the episode end (no target there).
ACTION_IS_PAD = "action_is_pad"
# Natural-language instruction per batch row (what language-conditioned policies read).
TASK = "task"
# The benchmark's own task name per batch row (e.g. "push-v3"); scripted experts need it
# because several tasks share one description.
ENV_TASK = "env_task"
# Tokenised instruction (language-conditioned policies): token ids and which ones are real.
OBS_LANGUAGE_TOKENS = "observation.language.tokens"
OBS_LANGUAGE_ATTENTION_MASK = "observation.language.attention_mask"
