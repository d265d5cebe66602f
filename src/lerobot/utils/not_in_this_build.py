"""LeRobot's public names that this build does not provide: importable, refused in one line on use.

A script written against LeRobot imports many names it never calls; refusing the import would
stop it before its first line runs. So each name below resolves, through its module's
`__getattr__`, to a `Refused` stand-in, and using it (calling, subclassing, reading an
attribute) raises `NotInThisBuildError` naming it and what to use instead. Names for real
robots, dataset tooling, training internals and policy types this build lacks are refused
this way; tests/test_lerobot_names.py checks every public name of LeRobot 0.6.1 that a user
touches for evaluation and loading (tests/fixtures/lerobot_0_6_1_names.json) against this
table and the modules.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NoReturn

from lerobot.utils.errors import NotInThisBuildError

SUPPORTED_TYPES = "act, diffusion, smolvla, pi0 and pi05"
POLICY_TYPE = f"a policy type this build does not implement; use {SUPPORTED_TYPES} checkpoints"
ROBOT = "real robots, teleoperation and human-in-the-loop RL are not part of this build; use LeRobot itself for hardware"
PROCESSOR = (
    "a processor step or helper this build does not define (env-side gym conversions, action "
    "tokenisation, relative actions, the robot defaults); use lerobot.processor's pipeline and "
    "standard steps, or register your own with ProcessorStepRegistry.register"
)
TRAINING = "a training setting or internal of LeRobot; use lerobot-train (its --help lists the flags)"
DATASETS = "LeRobot's dataset and video tooling is not part of this build; use lerobot-record-sim, which writes LeRobot v3 datasets"
BENCHMARK = "a benchmark this build does not have; use --env.type=metaworld, libero, libero_pro, pusht, aloha, maniskill or robomimic"
HUB_CODE = (
    "this build never runs env code from the hub; use an env installed as a package, through its EnvConfig"
)
EVAL_INTERNAL = "an internal of LeRobot's evaluation loop; use eval_policy_all, eval_policy or eval_main of lerobot.scripts.lerobot_eval"
PARSER = "a helper of LeRobot's command-line parser; use lerobot.configs.parser.wrap (or parse_config)"
CONSOLE = "a console or speech helper of LeRobot's recording scripts, not part of this build; use logging"
RNG = "LeRobot's saving of random states for training; use --resume=true of lerobot-train, which restores them itself"


def model_internal(policy_class: str) -> str:
    return f"an internal of LeRobot's model; use {policy_class} (from_pretrained, select_action, predict_action_chunk)"


def _each(reason: str, *names: str) -> dict[str, str]:
    return dict.fromkeys(names, reason)


PROCESSOR_NAMES = (
    "ActionTokenizerProcessorStep", "DefaultPolicyProcessorSteps", "ImageCropResizeProcessorStep",
    "Numpy2TorchActionProcessorStep", "TimeLimitProcessorStep", "Torch2NumpyActionProcessorStep",
    "VanillaObservationProcessorStep", "make_default_policy_processor_steps", "make_default_pre_post_processors",
    "make_default_processors", "make_policy_processor_pipelines", "to_absolute_actions", "to_relative_actions",
)  # fmt: skip
ROBOT_PROCESSOR_NAMES = (
    "AddTeleopActionAsComplimentaryDataStep", "AddTeleopEventsAsInfoStep", "GripperPenaltyProcessorStep",
    "GymHILAdapterProcessorStep", "InterventionActionProcessorStep", "MapDeltaActionToRobotActionStep",
    "MapTensorToDeltaActionDictStep", "PolicyActionToRobotActionProcessorStep", "RewardClassifierProcessorStep",
    "RobotActionToPolicyActionProcessorStep", "make_default_robot_action_processor", "make_default_robot_observation_processor",
    "make_default_teleop_action_processor", "robot_action_observation_to_transition",
    "robot_action_to_transition", "transition_to_robot_action",
)  # fmt: skip
UNSUPPORTED_POLICY_CONFIGS = (
    "EO1Config", "Evo1Config", "FastWAMConfig", "GaussianActorConfig", "GrootConfig", "LingBotVAConfig",
    "MolmoAct2Config", "MultiTaskDiTConfig", "PI0FastConfig", "TDMPCConfig", "VLAJEPAConfig", "VQBeTConfig",
    "WallXConfig", "XVLAConfig",
)  # fmt: skip
DATASET_CONFIG_NAMES = (
    "DatasetRecordConfig", "VideoEncoderConfig", "RGBEncoderConfig", "DepthEncoderConfig", "rgb_encoder_defaults",
    "depth_encoder_defaults", "encoder_config_from_video_info", "infer_depth_unit", "DEFAULT_DEPTH_UNIT",
    "DEPTH_METER_UNIT", "DEPTH_MILLIMETER_UNIT", "VALID_VIDEO_CODECS", "VIDEO_ENCODER_INFO_KEYS",
)  # fmt: skip
TRAINING_CONFIG_NAMES = ("DatasetConfig", "JobConfig", "PeftConfig", "WandBConfig")
PI_INTERNALS = (
    "ActionSelectKwargs",
    "compute_layer_complete",
    "GemmaConfig",
    "get_gemma_config",
    "PaliGemmaWithExpertModel",
)

REFUSED: dict[str, dict[str, str]] = {
    "lerobot.policies": {
        **_each(POLICY_TYPE, *UNSUPPORTED_POLICY_CONFIGS),
        **_each(ROBOT, "ActionInterpolator", "make_robot_action", "prepare_observation_for_inference"),
    },
    "lerobot.processor": {
        **_each(PROCESSOR, *PROCESSOR_NAMES),
        **_each(ROBOT, *ROBOT_PROCESSOR_NAMES),
        **_each(BENCHMARK, "IsaaclabArenaProcessorStep"),
    },
    "lerobot.processor.env_processor": _each(BENCHMARK, "IsaaclabArenaProcessorStep"),
    "lerobot.processor.converters": {
        **_each(PROCESSOR, "to_tensor"),
        **_each(
            ROBOT,
            "robot_action_observation_to_transition",
            "robot_action_to_transition",
            "transition_to_robot_action",
        ),
    },
    "lerobot.processor.batch_processor": _each(
        PROCESSOR,
        "AddBatchDimensionActionStep",
        "AddBatchDimensionObservationStep",
        "AddBatchDimensionComplementaryDataStep",
    ),  # fmt: skip
    "lerobot.processor.tokenizer_processor": _each(PROCESSOR, "ActionTokenizerProcessorStep"),
    "lerobot.processor.relative_action_processor": {
        **_each(ROBOT, "MapDeltaActionToRobotActionStep", "MapTensorToDeltaActionDictStep"),
        **_each(PROCESSOR, "to_relative_actions", "to_absolute_actions"),
    },
    "lerobot.envs": {**_each(ROBOT, "HILSerlRobotEnvConfig"), **_each(HUB_CODE, "HubEnvConfig")},
    "lerobot.envs.configs": {
        **_each(HUB_CODE, "HubEnvConfig"),
        **_each(
            ROBOT,
            "ImagePreprocessingConfig",
            "RewardClassifierConfig",
            "InverseKinematicsConfig",
            "ObservationConfig",
            "GripperConfig",
            "ResetConfig",
            "HILSerlProcessorConfig",
            "HILSerlRobotEnvConfig",
        ),  # fmt: skip
        **_each(
            BENCHMARK,
            "RoboCasaEnv",
            "VLABenchEnv",
            "IsaaclabArenaEnv",
            "LiberoPlusEnv",
            "RoboTwinEnvConfig",
            "RoboMMEEnv",
        ),
    },
    "lerobot.configs": {
        **_each(DATASETS, *DATASET_CONFIG_NAMES),
        **_each(TRAINING, *TRAINING_CONFIG_NAMES, "MessageTurn", "TrainingRecipe", "load_recipe"),
    },
    "lerobot.configs.default": _each(TRAINING, *TRAINING_CONFIG_NAMES),
    "lerobot.configs.parser": _each(
        PARSER,
        "get_cli_overrides",
        "get_yaml_overrides",
        "print_scoped_help",
        "filter_arg",
        "filter_path_args",
        "extract_path_fields_from_config",
    ),  # fmt: skip
    "lerobot.utils.utils": _each(
        CONSOLE, "say", "log_say", "enter_pressed", "move_cursor_up", "SuppressProgressBars", "TimerManager"
    ),
    "lerobot.utils.random_utils": _each(
        RNG,
        "serialize_python_rng_state",
        "deserialize_python_rng_state",
        "serialize_numpy_rng_state",
        "deserialize_numpy_rng_state",
        "serialize_torch_rng_state",
        "deserialize_torch_rng_state",
        "serialize_rng_state",
        "deserialize_rng_state",
        "save_rng_state",
        "load_rng_state",
        "get_rng_state",
        "set_rng_state",
        "seeded_context",
    ),  # fmt: skip
    "lerobot.scripts.lerobot_eval": _each(EVAL_INTERNAL, "TaskMetrics", "eval_one", "run_one", "ACC_KEYS"),
    "lerobot.policies.act.modeling_act": _each(
        model_internal("ACTPolicy"),
        "ACTTemporalEnsembler",
        "create_sinusoidal_pos_embedding",
        "ACTSinusoidalPositionEmbedding2d",
        "get_activation_fn",
    ),  # fmt: skip
    "lerobot.policies.smolvla.modeling_smolvla": _each(
        model_internal("SmolVLAPolicy"),
        "ActionSelectKwargs",
        "normalize",
        "unnormalize",
        "safe_arcsin",
        "aloha_gripper_to_angular",
        "aloha_gripper_from_angular",
        "aloha_gripper_from_angular_inv",
    ),  # fmt: skip
    "lerobot.policies.pi0.modeling_pi0": _each(model_internal("PI0Policy"), *PI_INTERNALS, "PI0Pytorch"),
    "lerobot.policies.pi05.modeling_pi05": _each(model_internal("PI05Policy"), *PI_INTERNALS, "PI05Pytorch"),
}


class Refused:
    """The stand-in of a LeRobot name this build lacks: importing it works, using it raises."""

    def __init__(self, qualified_name: str, reason: str):
        self._qualified_name, self._reason = qualified_name, reason

    def error(self) -> NotInThisBuildError:
        return NotInThisBuildError(f"{self._qualified_name}: {self._reason}")

    def __call__(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise self.error()

    def __getattr__(self, name: str) -> NoReturn:
        if name.startswith("__"):  # copy, pickle and introspection ask for dunders: not a use
            raise AttributeError(name)
        raise self.error()

    def __mro_entries__(self, bases: tuple) -> NoReturn:
        raise self.error()

    def __repr__(self) -> str:
        return f"<not in this build: {self._qualified_name}>"


def refused_attribute(module_name: str, name: str) -> Refused:
    """What a module's `__getattr__` gives for LeRobot's `name`: its `Refused` stand-in, or
    AttributeError when `name` is not one of LeRobot's."""
    reason = REFUSED.get(module_name, {}).get(name)
    if reason is None:
        raise AttributeError(f"module {module_name!r} has no attribute {name!r}")
    return Refused(f"{module_name}.{name}", reason)


def refused_names(module_name: str) -> Callable[[str], Refused]:
    """A module `__getattr__` giving LeRobot's names that the module lacks as `Refused`."""
    return lambda name: refused_attribute(module_name, name)
