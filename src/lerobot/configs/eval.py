"""The `lerobot-eval` configuration: the evaluation loop's settings (`--eval.*`, shared with
in-training evaluation) and the full pipeline config around them."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Literal

from lerobot.configs.dataset import DATASET_MODULES
from lerobot.configs.env import EnvConfig
from lerobot.configs.fields import backend_only_fields, facts
from lerobot.configs.policies import CheckpointPolicyConfig, PreTrainedConfig
from lerobot.utils.errors import ConfigError, require_extra
from lerobot.utils.seeds import SEED_LIMIT, last_episode_seed

BACKENDS = ("local", "ray")


@dataclass
class EvalConfig:
    n_episodes: int = 50
    """Episodes per task."""
    batch_size: int = field(default=0, metadata=facts(result_neutral=True))
    """Envs stepped in parallel per task; 0 = auto: the batch size --eval.measure_batch_size
    found for this machine and workload, else min(max(floor(0.7 x CPU cores), 2), n_episodes, 64)
    (1 on a single core).
    A value above n_episodes is clamped to it."""
    measure_batch_size: bool = field(default=False, metadata=facts(result_neutral=True))
    """Before the run, measure the env steps per second of this policy on the first task at a
    few batch sizes from half to four times the CPU cores (up to 64; seconds each), then the
    fastest size in 2 and 4 row groups (unless --eval.row_groups is given), run with the
    fastest (the smallest within 3% of it), and remember it for this machine and workload:
    later runs of the same env settings and policy type on this device with
    --eval.batch_size=0 (and --eval.row_groups=0) use it. Kept in $LEROBOT_CACHE_DIR (default
    ~/.cache/lerobot)/eval_batch_sizes.json."""
    use_async_envs: bool = field(default=True, metadata=facts(result_neutral=True))
    """Step envs in worker processes; ignored (synchronous) when the batch has one env, and by
    the Ray backend, whose workers step their envs in-process."""
    envs_in_main_process: int | None = field(default=None, metadata=facts(result_neutral=True))
    """With async envs, how many envs of the batch the main process steps itself while the
    workers step the others (it would otherwise only wait for them); None = auto: 1 for a
    batch of 2 to 4 envs on a machine with a core for each, else 0. Such an env has no crash
    isolation: a hang is not timed out and a segfault ends the run (finished episodes stay in
    episodes.jsonl; --eval.resume=true goes on). Per-episode results are identical either way."""
    max_episodes_rendered: int = field(default=10, metadata=facts(result_neutral=True))
    """Videos written per task: the first N episodes of each task."""
    continuous_batching: bool = field(default=True, metadata=facts(result_neutral=True))
    """Start the next pending episode in a slot as soon as its episode ends, instead of waiting
    for the whole batch. Per-episode results are identical either way."""
    chunks_in_workers: bool = field(default=True, metadata=facts(result_neutral=True))
    """A policy acting from a queued action chunk (ACT, SmolVLA, π0, a served policy) sends the
    rest of each chunk to the env worker in one message, which steps it and renders only the
    observation the policy reads next: one round trip per chunk instead of per step.
    Per-episode results are identical either way."""
    row_groups: int = field(default=0, metadata=facts(result_neutral=True))
    """Split the batch into this many groups of envs that take turns: while the policy computes
    the next actions of one group, the workers of the others step, so an evaluation costs
    closer to max(policy, simulation) than to their sum (a GPU policy beside many envs).
    Groups are made of whole worker processes (at most one per worker); a policy that cannot
    keep rows aside (it cannot be served either) runs as one group. 1 = lockstep: every env
    steps, then the policy computes for all. 0 = auto: the grouping --eval.measure_batch_size
    found fastest for this workload here, else lockstep. Each episode gets the same seed and
    policy row either way; a neural policy's actions can differ in their last bits, as between
    batch sizes (its matrix products run over the rows of one group)."""
    independent_rows: bool | None = field(default=None, metadata=facts(result_neutral=True))
    """Let each worker's envs advance on their own instead of in lockstep: their next actions
    are computed as soon as they are back, in one policy call with every other worker back by
    then, while the rest keep stepping; a slow step, reset or render holds up its own worker
    only. Needs envs in worker processes and a policy that can keep rows aside (otherwise
    lockstep). None = auto: what --eval.measure_batch_size found fastest for this workload
    here, else false. Per-episode results are as with --eval.row_groups."""
    resume: bool = field(default=False, metadata=facts(result_neutral=True))
    """Continue the run in --output_dir: run only the episodes its episodes.jsonl lacks."""
    step_timeout_s: float = field(default=300.0, metadata=facts(result_neutral=True))
    """A worker that does not answer a reset or step within this time is killed and replaced.
    A new worker's first reset, which builds the simulator, gets at least 600 s."""
    shard: str | None = None
    """`i/n`: run only episodes e with e % n == i of every task (0 <= i < n), into this run's
    own output dir; `lerobot-eval-merge` joins the shards. Default: all episodes."""
    max_episode_retries: int = field(default=2, metadata=facts(result_neutral=True))
    """Re-runs (from the start, same seed) of an episode whose worker crashed or hung; after
    that it is recorded as failed with its reason."""
    backend: str = field(default="local", metadata=facts(result_neutral=True))
    """Where episodes run: `local` (this process and its env workers) or `ray` (actors on a
    Ray cluster, one policy copy each; needs `pip install 'lerobot[ray]'`)."""
    ray_address: str | None = field(default=None, metadata=facts(result_neutral=True, only_backend="ray"))
    """Ray cluster to use with --eval.backend=ray: None starts a Ray instance on this machine
    for the run; `auto` joins the cluster that `ray start` runs here; `host:port` joins the
    cluster whose head's GCS listens there (from a node of it); `ray://host:port` drives it
    through Ray Client from anywhere."""
    num_workers: int = field(default=0, metadata=facts(result_neutral=True, only_backend="ray"))
    """Ray actors, each with one CPU, one policy copy and its envs; 0 = auto: the CPUs Ray
    reports minus one for the driver (and no more than the GPUs hold with
    --eval.gpus_per_worker), at least 1."""
    gpus_per_worker: float = field(default=0.0, metadata=facts(result_neutral=True, only_backend="ray"))
    """GPUs each Ray actor reserves for its policy, fractions allowed (0.5: two per GPU)."""
    envs_per_worker: int = field(default=0, metadata=facts(result_neutral=True))
    """Envs each worker process steps in turn; 0 = auto. Local backend: a worker per core at
    most, each stepping ceil(envs in workers / cores) envs (64 envs on 16 cores: 16 workers of
    4), where more processes would only compete for the cores. Ray: the envs each actor steps,
    with one policy call for all of them (a larger batch per GPU call; auto: 1)."""
    recording: bool = False
    """Also record every evaluated rollout as a LeRobot v3 dataset, one per task (what
    lerobot-record-sim writes), under --eval.recording_root."""
    recording_root: Path | None = None
    """Where --eval.recording writes: <recording_root>/<group>_<task_id>/; default
    <output_dir>/recordings (LeRobot's place)."""
    recording_repo_id: str | None = None
    """LeRobot's flag to push recordings to the hub; refused here (this build never uploads)."""
    recording_private: bool = False
    """LeRobot's flag for private hub recordings; refused here like --eval.recording_repo_id."""

    def __post_init__(self) -> None:
        _ = self.shard_spec  # validates --eval.shard before anything starts
        self._check_backend()
        self._check_recording()
        if self.n_episodes <= 0:
            raise ConfigError(f"--eval.n_episodes={self.n_episodes}: must be a positive integer")
        if self.batch_size < 0:
            raise ConfigError(f"--eval.batch_size={self.batch_size}: must be 0 (auto) or a positive integer")
        if self.measure_batch_size and self.batch_size:
            raise ConfigError(
                f"--eval.measure_batch_size=true: it chooses the batch size; drop --eval.batch_size={self.batch_size}"
            )
        if self.envs_in_main_process is not None and self.envs_in_main_process < 0:
            raise ConfigError(
                f"--eval.envs_in_main_process={self.envs_in_main_process}: must be 0 or more (none: auto)"
            )
        if self.row_groups < 0:
            raise ConfigError(f"--eval.row_groups={self.row_groups}: must be 0 (auto), 1 (lockstep) or more")
        if self.independent_rows and self.row_groups > 1:
            raise ConfigError(
                f"--eval.row_groups={self.row_groups}: --eval.independent_rows=true already lets every "
                "worker advance on its own; drop one of them"
            )
        if self.step_timeout_s <= 0:
            raise ConfigError(
                f"--eval.step_timeout_s={self.step_timeout_s}: must be a positive number of seconds"
            )
        if self.max_episode_retries < 0:
            raise ConfigError(f"--eval.max_episode_retries={self.max_episode_retries}: must be 0 or more")
        if self.max_episodes_rendered < 0:
            raise ConfigError(f"--eval.max_episodes_rendered={self.max_episodes_rendered}: must be 0 or more")

    def _check_backend(self) -> None:
        if self.backend not in BACKENDS:
            raise ConfigError(f"--eval.backend={self.backend!r}: choose one of {', '.join(BACKENDS)}")
        if self.num_workers < 0:
            raise ConfigError(
                f"--eval.num_workers={self.num_workers}: must be 0 (auto) or a positive integer"
            )
        if self.gpus_per_worker < 0:
            raise ConfigError(
                f"--eval.gpus_per_worker={self.gpus_per_worker}: must be 0 or more (fractions allowed)"
            )
        if self.envs_per_worker < 0:
            raise ConfigError(
                f"--eval.envs_per_worker={self.envs_per_worker}: must be 0 (auto) or a positive integer"
            )
        if self.backend == "local":
            defaults = {f.name: f.default for f in fields(self)}
            for name in backend_only_fields(EvalConfig, "ray"):
                if getattr(self, name) != defaults[name]:
                    raise ConfigError(
                        f"--eval.{name}={getattr(self, name)}: only used by the Ray backend; add --eval.backend=ray"
                    )
            return
        require_extra("--eval.backend=ray", "ray", ("ray",))
        if self.ray_address is not None:
            ray_address_endpoint(self.ray_address)  # its form, now; whether it answers, before the run
        if self.batch_size != 0 or self.measure_batch_size:
            given = f"batch_size={self.batch_size}" if self.batch_size else "measure_batch_size=true"
            raise ConfigError(
                f"--eval.{given}: only used by the local backend; "
                "with --eval.backend=ray set --eval.envs_per_worker"
            )
        if self.row_groups > 1 or self.independent_rows:
            given = "independent_rows=true" if self.independent_rows else f"row_groups={self.row_groups}"
            raise ConfigError(
                f"--eval.{given}: only used by the local backend, whose envs run in worker "
                "processes; a Ray worker steps its envs in lockstep"
            )

    def _check_recording(self) -> None:
        if self.recording_repo_id is not None or self.recording_private:
            given = (
                f"recording_repo_id={self.recording_repo_id}"
                if self.recording_repo_id is not None
                else "recording_private=true"
            )
            raise ConfigError(
                f"--eval.{given}: this build never uploads; recordings are written under "
                "--eval.recording_root, upload them yourself (e.g. with `hf upload`)"
            )
        if self.recording_root is not None and not self.recording:
            raise ConfigError(f"--eval.recording_root={self.recording_root}: add --eval.recording=true")
        if not self.recording:
            return
        require_extra("--eval.recording=true", "train", DATASET_MODULES)
        if self.backend != "local":
            raise ConfigError(
                "--eval.recording=true: only the local backend records; drop --eval.backend=ray"
            )
        if self.resume:
            raise ConfigError(
                "--eval.recording=true: a resumed run cannot record (its finished episodes would be "
                "missing from the datasets); start a new --output_dir"
            )

    @property
    def shard_spec(self) -> tuple[int, int] | None:
        """(index, count) from `--eval.shard=i/n`, or None for all episodes."""
        if self.shard is None:
            return None
        index, _, count = self.shard.partition("/")
        if not (index.isdigit() and count.isdigit() and 0 <= int(index) < int(count)):
            raise ConfigError(f"--eval.shard={self.shard!r}: must be i/n with 0 <= i < n, e.g. 0/4")
        return int(index), int(count)

    @property
    def episodes_per_task(self) -> int:
        """Episodes of each task this run executes (all of them, or this shard's)."""
        if self.shard_spec is None:
            return self.n_episodes
        index, count = self.shard_spec
        return max(1, len(range(index, self.n_episodes, count)))


@dataclass
class EvalPipelineConfig:
    env: EnvConfig | None = None
    """The benchmark: `--env.type=metaworld` and its settings (`--env.task=...`)."""
    eval: EvalConfig = field(default_factory=EvalConfig)
    """Episodes, batch size, workers and videos."""
    policy: PreTrainedConfig | None = None
    """The policy: `--policy.type=metaworld_expert|random`, or a LeRobot checkpoint with
    `--policy.path=<dir or hub repo id>` (and `--policy.revision=`)."""
    output_dir: Path | None = field(
        default=None,
        metadata=facts(result_neutral=True, shown_default="outputs/eval/<date>/<time>_<job_name>"),
    )
    """Where eval_info.json and videos go; default outputs/eval/<date>/<time>_<job_name>."""
    job_name: str | None = field(default=None, metadata=facts(result_neutral=True))
    """Name of this run; default <env type>_<policy type>."""
    seed: int = 1000
    """Episode e of every task starts from seed + e."""
    rename_map: dict[str, str] = field(default_factory=dict)
    """Rename observation keys before the policy sees them, e.g. '{"observation.image": "observation.images.top"}'."""
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = field(
        default="INFO", metadata=facts(result_neutral=True)
    )
    """Console logging detail; DEBUG adds a line per finished episode."""
    trust_remote_code: bool = False
    """LeRobot's flag for hub code; accepted for compatibility. This build never imports code
    from a checkpoint or the hub, so checkpoints of other policy types fail either way."""
    overwrite: bool = field(default=False, metadata=facts(result_neutral=True))
    """Replace the results of an earlier run in --output_dir (its eval_info.json, episodes.jsonl,
    run_config.json, reports and videos) instead of refusing to start."""

    def __post_init__(self) -> None:
        if self.env is None:
            choices = ", ".join(EnvConfig.get_known_choices())
            raise ConfigError(f"--env.type: required; choose one of {choices}")
        check_seeds(self.seed, self.eval.n_episodes)
        if self.policy is None:
            choices = ", ".join(PreTrainedConfig.get_known_choices())
            raise ConfigError(f"--policy.type: required; choose one of {choices}")
        if isinstance(self.policy, CheckpointPolicyConfig):
            if self.policy.pretrained_path is None:
                raise ConfigError(
                    f"--policy.type={self.policy.type}: needs trained weights; pass --policy.path=<checkpoint dir or repo id>"
                )
            self.policy.check_env_inputs(self.env.policy_features(), self.rename_map)
        self._check_parallel_tasks()
        self.policy.check_env(self.env)
        if self.job_name is None:
            self.job_name = f"{self.env.type}_{self.policy.type}"
        check_job_name(self.job_name)
        if self.output_dir is not None and str(self.output_dir).strip() in ("", "."):
            raise ConfigError(
                f"--output_dir={self.output_dir}: give the directory results go to (a new or empty one), "
                "or leave the flag out for outputs/eval/<date>/<time>_<job_name>"
            )
        if self.output_dir is None:
            now = dt.datetime.now()
            self.output_dir = Path("outputs/eval") / f"{now:%Y-%m-%d}" / f"{now:%H-%M-%S}_{self.job_name}"
        self.output_dir = Path(self.output_dir)
        if self.eval.recording and self.eval.recording_root is None:
            self.eval.recording_root = self.output_dir / "recordings"

    def _check_parallel_tasks(self) -> None:
        """`--env.max_parallel_tasks` (LeRobot's place for it) belongs to the local backend."""
        n = getattr(self.env, "max_parallel_tasks", 1)
        if not isinstance(n, int) or n < 1:
            raise ConfigError(f"--env.max_parallel_tasks={n}: must be a positive integer")
        if n > 1 and self.eval.measure_batch_size:
            raise ConfigError(
                f"--env.max_parallel_tasks={n}: --eval.measure_batch_size=true measures one task at a "
                "time on the whole machine; measure without it, then run with --eval.batch_size=0"
            )
        if n > 1 and self.eval.backend != "local":
            raise ConfigError(
                f"--env.max_parallel_tasks={n}: only used by the local backend; the Ray backend "
                "already runs tasks on all its workers at once"
            )


def check_seeds(seed: int, n_episodes: int) -> None:
    """Every episode seed (`episode_seed`) must be one a simulator accepts."""
    if not (seed >= 0 and last_episode_seed(seed, n_episodes) < SEED_LIMIT):
        raise ConfigError(
            f"--seed={seed}: episode seeds run from seed to seed + n_episodes - 1 and must lie in "
            f"[0, {SEED_LIMIT - 1}]; choose 0 <= --seed <= {SEED_LIMIT - n_episodes}"
        )


def check_job_name(job_name: str) -> None:
    """A job name names a folder: no path separators, no `..`."""
    if not job_name.strip() or job_name == "." or any(part in job_name for part in ("/", "\\", "..")):
        raise ConfigError(f"--job_name={job_name!r}: must be a plain name (no '/', '\\' or '..')")


RAY_ADDRESS_FORMS = "auto, local, host:port (the head's GCS, e.g. 10.0.0.1:6379) or ray://host:port (Ray Client, e.g. ray://10.0.0.1:10001)"


def ray_address_endpoint(address: str) -> tuple[str, int] | None:
    """(host, port) that `--eval.ray_address` names; None for `auto` and `local`, which Ray
    resolves itself. A one-line ConfigError for any other form."""
    if address in ("auto", "local"):
        return None
    host, sep, port = address.removeprefix("ray://").rpartition(":")
    host = host.strip("[]")  # an IPv6 literal, [::1]:6379
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ConfigError(f"--eval.ray_address={address}: must be {RAY_ADDRESS_FORMS}")
    return host, int(port)
