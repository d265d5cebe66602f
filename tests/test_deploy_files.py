"""The deployment files in deploy/ hold together, and their commands parse with our CLIs' parsers.

deploy/kuberay/rayjob-metaworld.yaml is a KubeRay RayJob: read as YAML, it must have a head and
worker groups running one of our benchmark images, built with Ray (the image's benchmark is the
one the entrypoint evaluates), its Ray version that of requirements/lock.txt, and one shared
volume mounted at the same path on every pod, holding the checkpoint and the output directory.
deploy/slurm/*.sbatch are bash scripts (`bash -n`); the array job's shards must cover the
array's tasks, and the merge must read the directories the shards write.

Every `lerobot-eval` and `lerobot-eval-merge` command in these files is parsed without running
anything, as tests/test_documented_commands.py parses the documented ones (its finder, its
policy stand-in for `--policy.path`, which names a checkpoint on the cluster, and its
`check_parses`), so that renaming a flag breaks this test and not a cluster job. Shell
variables are replaced first: those the script sets to a literal value by that value, those
Slurm or the script computes at run time by SAMPLE_VALUES; none may be left over.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path, PurePosixPath

import pytest
import yaml

from lerobot.scripts.lerobot_eval_merge import argument_parser
from tests.test_documented_commands import (
    PLACEHOLDER,
    DocumentedCommand,
    check_parses,
    command_args,
    joined_flags,
    logical_lines,
    substitute_env,
)

REPO = Path(__file__).resolve().parents[1]
RAYJOB = REPO / "deploy" / "kuberay" / "rayjob-metaworld.yaml"
SLURM = REPO / "deploy" / "slurm"
SBATCH_FILES = sorted(SLURM.glob("*.sbatch"))
BENCHMARKS = {
    path.name.removeprefix("Dockerfile.benchmark.")
    for path in (REPO / "docker").glob("Dockerfile.benchmark.*")
}
SAMPLE_VALUES = {"SLURM_ARRAY_TASK_ID": "0", "HEAD_ADDRESS": "127.0.0.1:6379"}
"""Values known only when the job runs, as one array task or one allocation would see them."""
LITERAL_ASSIGNMENT_RE = re.compile(r"(?m)^([A-Za-z_]\w*)=([^\s$`'\"]+)$")
PROGRAMS = ("lerobot-eval", "lerobot-eval-merge")


def relative(path: Path) -> str:
    return str(path.relative_to(REPO))


def rayjob() -> dict:
    return yaml.safe_load(RAYJOB.read_text())


def commands_in(text: str, program: str, source: str, skip_comments: bool) -> list[DocumentedCommand]:
    """Every `program` invocation with arguments, positional ones included (lerobot-eval-merge
    starts with its run directories); in a script, comments and #SBATCH lines are left out."""
    found = []
    for number, line in logical_lines(text):
        if skip_comments and line.lstrip().startswith("#"):
            continue
        for args in command_args(line, program):
            if args:
                found.append(DocumentedCommand(program, f"{source}:{number}", tuple(args)))
    return found


def script_commands(path: Path, program: str) -> list[DocumentedCommand]:
    text = path.read_text()
    variables = dict(LITERAL_ASSIGNMENT_RE.findall(text)) | SAMPLE_VALUES
    return commands_in(substitute_env(text, variables), program, relative(path), skip_comments=True)


def deploy_commands(program: str) -> list[DocumentedCommand]:
    entrypoint = rayjob()["spec"]["entrypoint"]
    found = commands_in(entrypoint, program, f"{relative(RAYJOB)} (entrypoint)", skip_comments=False)
    for path in SBATCH_FILES:
        found += script_commands(path, program)
    return found


def flag_values(command: DocumentedCommand) -> dict[str, str]:
    return dict(flag.removeprefix("--").partition("=")[::2] for flag in joined_flags(command.args))


def only(commands: list[DocumentedCommand]) -> DocumentedCommand:
    assert len(commands) == 1, [str(c) for c in commands]
    return commands[0]


def source_file(command: DocumentedCommand) -> str:
    return command.source.split(":")[0].split(" ")[0]


def inside(path: str, directory: str) -> bool:
    return PurePosixPath(directory) in PurePosixPath(path).parents


# --- every command parses --------------------------------------------------------------------

EVAL_COMMANDS = deploy_commands("lerobot-eval")
MERGE_COMMANDS = deploy_commands("lerobot-eval-merge")


def test_every_file_has_its_commands():
    """Guards against a vacuous pass: a finder that finds nothing checks nothing."""
    assert sorted(source_file(c) for c in EVAL_COMMANDS) == [
        "deploy/kuberay/rayjob-metaworld.yaml",
        "deploy/slurm/eval_shards.sbatch",
        "deploy/slurm/ray_on_allocation.sbatch",
    ]
    assert [source_file(c) for c in MERGE_COMMANDS] == ["deploy/slurm/merge_shards.sbatch"]


@pytest.mark.parametrize("command", EVAL_COMMANDS + MERGE_COMMANDS, ids=lambda c: c.source)
def test_no_variable_is_left_unknown(command):
    assert not any(PLACEHOLDER in arg for arg in command.args), (
        f"{command.source}: `{command}` uses a shell variable that is neither set in the script "
        f"nor in SAMPLE_VALUES"
    )


@pytest.mark.parametrize("command", EVAL_COMMANDS, ids=lambda c: c.source)
def test_eval_command_parses(command):
    check_parses(command)


def exact_merge_parser():
    """lerobot-eval-merge's parser, taking flags by their full names only: argparse would read
    `--output_dir` as an abbreviation of a renamed `--output_directory`."""
    parser = argument_parser()
    parser.allow_abbrev = False
    return parser


@pytest.mark.parametrize("command", MERGE_COMMANDS, ids=lambda c: c.source)
def test_merge_command_parses(command):
    try:
        exact_merge_parser().parse_args(list(command.args))
    except SystemExit:
        pytest.fail(f"{command.source}: `{command}` does not parse (argparse's message above)", pytrace=False)


def test_a_renamed_flag_fails():
    """What the tests above rely on: a flag that is not in the config is an error."""
    command = only([c for c in EVAL_COMMANDS if "ray_on_allocation" in c.source])
    renamed = DocumentedCommand(
        command.program,
        command.source,
        tuple(a.replace("--eval.ray_address", "--eval.ray_addr") for a in command.args),
    )
    with pytest.raises(pytest.fail.Exception, match="does not parse"):
        check_parses(renamed)
    with pytest.raises(SystemExit):
        exact_merge_parser().parse_args(["/shared/run/shard_0", "--output=/shared/run/merged"])


# --- KubeRay ---------------------------------------------------------------------------------


def pod_specs(job: dict) -> dict[str, dict]:
    """Each group's pod spec: `head`, then the worker groups by name."""
    cluster = job["spec"]["rayClusterSpec"]
    specs = {"head": cluster["headGroupSpec"]["template"]["spec"]}
    for group in cluster["workerGroupSpecs"]:
        specs[group["groupName"]] = group["template"]["spec"]
    return specs


def ray_container(spec: dict) -> dict:
    """KubeRay runs Ray in the pod's first container."""
    return spec["containers"][0]


def test_rayjob_is_a_kuberay_job_that_cleans_up():
    job = rayjob()
    assert job["apiVersion"] == "ray.io/v1"
    assert job["kind"] == "RayJob"
    assert job["spec"]["shutdownAfterJobFinishes"] is True
    workers = job["spec"]["rayClusterSpec"]["workerGroupSpecs"]
    assert len(workers) >= 1
    assert all(group["replicas"] >= 1 for group in workers)


def test_rayjob_runs_the_benchmark_image_it_evaluates_with_the_locked_ray():
    job = rayjob()
    images = {ray_container(spec)["image"] for spec in pod_specs(job).values()}
    assert len(images) == 1, f"head and workers must run one image (the same Ray and lerobot): {images}"
    name = PurePosixPath(images.pop().rsplit(":", 1)[0]).name
    assert name.startswith("lerobot-benchmark-"), f"{name}: not one of docker/Dockerfile.benchmark.*"
    benchmark = name.removeprefix("lerobot-benchmark-")
    assert benchmark in BENCHMARKS
    flags = flag_values(only([c for c in EVAL_COMMANDS if "kuberay" in c.source]))
    assert flags["env.type"] == benchmark
    assert flags["eval.backend"] == "ray"
    assert flags["eval.ray_address"] == "auto"
    locked = re.search(r"(?m)^ray==([\w.]+)", (REPO / "requirements" / "lock.txt").read_text())
    assert job["spec"]["rayClusterSpec"]["rayVersion"] == locked.group(1)


def test_rayjob_renders_with_egl_on_every_pod():
    for group, spec in pod_specs(rayjob()).items():
        env = {item["name"]: item.get("value") for item in ray_container(spec).get("env", [])}
        assert env.get("MUJOCO_GL") == "egl", f"{group}: no MUJOCO_GL=egl"


def test_rayjob_shares_one_volume_at_one_path_holding_checkpoint_and_outputs():
    specs = pod_specs(rayjob())
    mounts = {}
    for group, spec in specs.items():
        claims = {
            volume["name"]: volume["persistentVolumeClaim"]["claimName"]
            for volume in spec["volumes"]
            if "persistentVolumeClaim" in volume
        }
        mounts[group] = {
            (claims[mount["name"]], mount["mountPath"])
            for mount in ray_container(spec)["volumeMounts"]
            if mount["name"] in claims
        }
    assert len({frozenset(m) for m in mounts.values()}) == 1, f"the groups mount different volumes: {mounts}"
    [(_, shared)] = mounts["head"]
    flags = flag_values(only([c for c in EVAL_COMMANDS if "kuberay" in c.source]))
    assert inside(flags["output_dir"], shared), "the driver's output_dir must be on the shared volume"
    assert inside(flags["policy.path"], shared), "every worker loads the checkpoint from its path"


def test_rayjob_workers_fit_in_the_worker_pods():
    job = rayjob()
    flags = flag_values(only([c for c in EVAL_COMMANDS if "kuberay" in c.source]))
    cpus = sum(
        int(ray_container(group["template"]["spec"])["resources"]["limits"]["cpu"]) * group["replicas"]
        for group in job["spec"]["rayClusterSpec"]["workerGroupSpecs"]
    )
    assert int(flags["eval.num_workers"]) <= cpus, "more Ray workers than the worker pods have CPUs"


# --- Slurm -----------------------------------------------------------------------------------


@pytest.mark.parametrize("path", SBATCH_FILES, ids=lambda p: p.name)
def test_sbatch_script_is_valid_bash(path):
    check = subprocess.run(["bash", "-n", str(path)], capture_output=True, text=True, check=False)
    assert check.returncode == 0, check.stderr


@pytest.mark.skipif(shutil.which("shellcheck") is None, reason="shellcheck is not installed")
@pytest.mark.parametrize("path", SBATCH_FILES, ids=lambda p: p.name)
def test_sbatch_script_passes_shellcheck(path):
    check = subprocess.run(["shellcheck", str(path)], capture_output=True, text=True, check=False)
    assert check.returncode == 0, check.stdout


def test_shards_cover_the_array_and_the_merge_reads_them():
    script = SLURM / "eval_shards.sbatch"
    array = re.search(r"(?m)^#SBATCH --array=(\d+)-(\d+)$", script.read_text())
    first, last = int(array.group(1)), int(array.group(2))
    flags = flag_values(only(script_commands(script, "lerobot-eval")))
    index, count = flags["eval.shard"].split("/")
    assert (first, index) == (0, SAMPLE_VALUES["SLURM_ARRAY_TASK_ID"])
    assert int(count) == last - first + 1, "--eval.shard's n must be the number of array tasks"
    assert flags["eval.resume"] == "true", "a task run again must continue its shard, not refuse it"
    shard_dir = PurePosixPath(flags["output_dir"])
    merge = only(MERGE_COMMANDS)
    run_dirs = [arg for arg in merge.args if not arg.startswith("--")]
    assert run_dirs == [str(shard_dir.parent / "shard_*")]
    assert shard_dir.match("shard_*")
    assert not PurePosixPath(flag_values(merge)["output_dir"]).match("shard_*")
