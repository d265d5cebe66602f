"""Every `lerobot-eval` / `lerobot-train` / `lerobot-record-sim` command line we document parses with our config parser.

A renamed or removed flag breaks the commands users copy from our docs, Dockerfiles and CI
long before anyone runs them; this test reads those commands and parses each one with the CLI's
own `parse_config`, without running anything (parsing builds the config dataclasses only; the
benchmark configs validate task names, no simulator starts).

Where: the `run:` scripts of .github/workflows/*.yml, docker/Dockerfile* (shell form, JSON exec
form such as `CMD ["lerobot-eval", ...]`, and comments), docs/source/*.mdx, README.md, Makefile.

What counts as a command line: the program name (also as `.venv/bin/lerobot-eval`) followed by a
`--flag`, after joining backslash continuations. The arguments are split as a POSIX shell would
(`shlex`) up to the first `&&`, `|`, `;`, redirection or comment; in markdown, up to the closing
backtick of an inline code span. A mention in prose ("`lerobot-eval` writes ...") has no flag
after it and is not a command. A `--help` line must print the help (exit 0), not fail to parse.

Placeholders: in a workflow, `${{ matrix.* }}` is expanded over the job's matrix (one command per
combination) and `${{ env.X }}`, `$X`, `${X}` take the workflow's, job's or step's `env:` value.
Any other placeholder (`$VAR`, `${VAR}`, `$(...)`, `${{ ... }}`, `<your-value>`) is only known
at run time, so its whole `--flag=value` token is left out of the parse; the flag name is still
checked, as an attribute of the parsed config.

`--policy.path=...`: a checkpoint is data, not a flag. Loading one would need the hub or a
trained model, so the path is replaced by the stand-in `--policy.type=random` (`act` for
lerobot-train; when the command has no `--policy.type` of its own), and `--policy.<field>` flags are kept only when `<field>` is
one every policy has (`device`, `use_amp`); the others depend on the checkpoint's policy type.

robosuite: robomimic's documented install (docs/source/robomimic.mdx, its Docker image) adds
robosuite 1.4.1 over the lock's 1.4.0, which this environment keeps for LIBERO; commands are
parsed as there, so that `--env.task=transport`, `tool_hang` or `all` parse (parsing reads only
robosuite's version, it never imports it).
"""

from __future__ import annotations

import dataclasses
import importlib
import itertools
import json
import re
import shlex
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

import lerobot.envs  # noqa: F401  (registers --env.type values, as the CLI does)
import lerobot.policies  # noqa: F401  (registers --policy.type values)
from lerobot.configs.help import wants_help
from lerobot.configs.parser import CliError, HelpRequested, parse_config
from lerobot.configs.policies import PreTrainedConfig
from lerobot.envs.robomimic import tasks as robomimic_tasks

REPO = Path(__file__).resolve().parents[1]
SOURCES = (
    ".github/workflows/*.yml",
    ".github/workflows/*.yaml",
    "docker/Dockerfile*",
    "docs/source/*.mdx",
    "README.md",
    "Makefile",
)
# program -> (module, config class) that its entry point parses into.
CONFIG_CLASSES = {
    "lerobot-eval": ("lerobot.configs.eval", "EvalPipelineConfig"),
    "lerobot-train": ("lerobot.configs.train", "TrainPipelineConfig"),
    "lerobot-record-sim": ("lerobot.configs.record", "RecordSimConfig"),
    "lerobot-serve-policy": ("lerobot.configs.serve", "ServeConfig"),
}
PLACEHOLDER = "__PLACEHOLDER__"
PLACEHOLDER_RE = re.compile(r"\$\{\{.*?\}\}|\$\([^()]*\)|\$\{[^}]*\}|\$\$?[A-Za-z_]\w*|<[A-Za-z][\w.-]*>")
EXEC_FORM_RE = re.compile(r"^\s*(?:CMD|ENTRYPOINT|RUN)\s+(\[.*\])\s*$")
MATRIX_REF_RE = re.compile(r"\$\{\{\s*matrix\.([\w.-]+)\s*\}\}")
STAND_IN_POLICY = "--policy.type=random"
# lerobot-train trains checkpoint policies only: its stand-in is one of those.
STAND_IN_TRAINED_POLICY = "--policy.type=act"
# Configs check at parse time that the extras their flags need are installed, and say which
# one to install: a documented command whose extra this environment lacks is skipped, saying so.
MISSING_EXTRA_RE = re.compile(r"pip install 'lerobot\[([\w-]+)\]'$")


@dataclasses.dataclass(frozen=True)
class DocumentedCommand:
    program: str
    source: str
    """Where it is written: `path:line`, or a workflow's path, job and step."""
    args: tuple[str, ...]

    def __str__(self) -> str:
        return f"{self.program} {shlex.join(self.args)}"


# --- finding command lines -------------------------------------------------------------------


def logical_lines(text: str) -> Iterator[tuple[int, str]]:
    """(first line number, line) with backslash continuations joined, also in `#` comments."""
    lines = text.splitlines()
    index = 0
    while index < len(lines):
        start, line = index, lines[index]
        while line.rstrip().endswith("\\") and index + 1 < len(lines):
            index += 1
            continued = lines[index].strip()
            if line.lstrip().startswith("#") and continued.startswith("#"):
                continued = continued[1:].strip()
            line = f"{line.rstrip()[:-1]} {continued}"
        yield start + 1, line
        index += 1


def shell_words(text: str) -> list[str]:
    """`text` split as a POSIX shell would, up to the first control operator or redirection."""
    text = re.sub(r"(?<!\S)\d+(?=[<>])", "", text)  # the `2` of `2>&1` is no argument
    lexer = shlex.shlex(text, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    words: list[str] = []
    for word in lexer:
        if word and all(c in lexer.punctuation_chars for c in word):
            break
        words.append(word)
    return words


def exec_form_args(line: str, program: str) -> list[list[str]] | None:
    """Argument lists from a Dockerfile JSON exec form line; None when the line is not one."""
    match = EXEC_FORM_RE.match(line)
    try:
        argv = json.loads(match.group(1)) if match else None
    except json.JSONDecodeError:
        return None  # shell form after all, e.g. `RUN [ -f x ] && ...`
    if not isinstance(argv, list) or not all(isinstance(word, str) for word in argv):
        return None
    return [argv[i + 1 :] for i, word in enumerate(argv) if Path(word).name == program]


def command_args(line: str, program: str) -> list[list[str]]:
    """The argument lists of every `program` invocation on one logical line."""
    from_exec_form = exec_form_args(line, program)
    if from_exec_form is not None:
        return from_exec_form
    found = []
    for match in re.finditer(rf"(?<![\w.-]){re.escape(program)}(?![\w.-])", line):
        rest = line[match.end() :].split("`", 1)[0]
        found.append(shell_words(PLACEHOLDER_RE.sub(PLACEHOLDER, rest)))
    return found


def commands_in_text(
    text: str, program: str, source: str, first_line: int | None = 1
) -> list[DocumentedCommand]:
    found = []
    for number, line in logical_lines(text):
        for args in command_args(line, program):
            if not args or not args[0].startswith("--"):
                continue  # prose mentioning the program
            where = f"{source}:{first_line + number - 1}" if first_line else source
            found.append(DocumentedCommand(program, where, tuple(args)))
    return found


# --- workflows: matrix and env values --------------------------------------------------------


def matrix_combinations(job: dict) -> list[dict]:
    """The job's matrix combinations, by GitHub's rules (simplified): product, exclude, include.

    An `include` entry extends every product combination it does not contradict; one that
    extends none (always the case in an include-only matrix) is a combination of its own.
    """
    matrix = (job.get("strategy") or {}).get("matrix")
    if not isinstance(matrix, dict):
        return [{}]  # no matrix, or one computed at run time (`${{ fromJSON(...) }}`)
    axes = {key: values for key, values in matrix.items() if key not in ("include", "exclude")}
    axes = {key: values for key, values in axes.items() if isinstance(values, list)}
    product = [dict(zip(axes, values, strict=True)) for values in itertools.product(*axes.values())]
    for excluded in matrix.get("exclude") or []:
        product = [c for c in product if not all(c.get(k) == v for k, v in excluded.items())]
    if not axes:
        product = []  # itertools.product() of nothing is one empty combination
    added: list[dict] = []
    for extra in matrix.get("include") or []:
        matching = [c for c in product if all(c[k] == v for k, v in extra.items() if k in axes)]
        for combo in matching:
            combo.update({k: v for k, v in extra.items() if k not in axes})
        if not matching:
            added.append(dict(extra))
    return product + added or [{}]


def expression_text(value) -> str:
    """A YAML value as GitHub writes it into a script (`true`, not `True`)."""
    return json.dumps(value) if isinstance(value, bool | dict | list) else str(value)


def substitute_matrix(text: str, combo: dict) -> str:
    def lookup(match: re.Match) -> str:
        value = combo
        for key in match.group(1).split("."):
            if not isinstance(value, dict) or key not in value:
                return match.group(0)  # unknown here; stays a placeholder
            value = value[key]
        return expression_text(value)

    return MATRIX_REF_RE.sub(lookup, text)


def substitute_env(text: str, env: dict[str, str]) -> str:
    for name, value in env.items():
        pattern = (
            rf"\$\{{\{{\s*env\.{re.escape(name)}\s*\}}\}}|\$\{{{re.escape(name)}\}}|\${re.escape(name)}(?!\w)"
        )
        text = re.sub(pattern, lambda _m, v=value: v, text)
    return text


def workflow_commands(path: Path, program: str) -> list[DocumentedCommand]:
    workflow = yaml.safe_load(path.read_text()) or {}
    relative = path.relative_to(REPO)
    found: dict[tuple, DocumentedCommand] = {}
    for job_id, job in (workflow.get("jobs") or {}).items():
        for combo in matrix_combinations(job):
            for number, step in enumerate(job.get("steps") or [], start=1):
                if "run" not in step or skipped_for(step, combo):
                    continue
                env = {**(workflow.get("env") or {}), **(job.get("env") or {}), **(step.get("env") or {})}
                env = {k: substitute_matrix(expression_text(v), combo) for k, v in env.items()}
                script = substitute_matrix(substitute_env(str(step["run"]), env), combo)
                label = f"{relative} (job {job_id}, step {step.get('name') or number}{matrix_label(combo)})"
                for command in commands_in_text(script, program, label, first_line=None):
                    found.setdefault((job_id, number, command.args), command)
    return list(found.values())


def skipped_for(step: dict, combo: dict) -> bool:
    """Whether the step's `if:` requires, as one of its `&&` operands, a matrix key that this
    combination lacks: GitHub reads the missing key as null, so the step never runs for it (how
    the SmolVLA steps apply only to the entries with a `smolvla_checkpoint`)."""
    condition = str(step.get("if", "")).strip()
    condition = condition.removeprefix("${{").removesuffix("}}")
    for operand in condition.split("&&"):
        match = re.fullmatch(r"\s*matrix\.([\w-]+)\s*", operand)
        if match and match.group(1) not in combo:
            return True
    return False


def matrix_label(combo: dict) -> str:
    return ", matrix " + ", ".join(f"{k}={expression_text(v)}" for k, v in combo.items()) if combo else ""


def documented_commands(program: str) -> list[DocumentedCommand]:
    found: list[DocumentedCommand] = []
    for pattern in SOURCES:
        for path in sorted(REPO.glob(pattern)):
            if path.suffix in (".yml", ".yaml"):
                found += workflow_commands(path, program)
            else:
                found += commands_in_text(path.read_text(), program, str(path.relative_to(REPO)))
    return found


# --- turning a documented command into parser arguments --------------------------------------


def joined_flags(args: tuple[str, ...]) -> list[str]:
    """`--flag value` pairs as `--flag=value` (draccus accepts both)."""
    joined: list[str] = []
    for arg in args:
        if joined and not arg.startswith("--") and "=" not in joined[-1]:
            joined[-1] = f"{joined[-1]}={arg}"
        else:
            joined.append(arg)
    return joined


def parser_args(command: DocumentedCommand) -> tuple[list[str], list[str]]:
    """(arguments to parse, flags whose value is only known at run time)."""
    flags = joined_flags(command.args)
    paths = [f.partition("=")[2] for f in flags if f.partition("=")[0] == "--policy.path"]
    if paths:
        assert all(paths), f"{command.source}: `{command}` has an empty --policy.path"
        flags = [f for f in flags if checkable_with_stand_in(f)]
        if not any(f.startswith("--policy.type=") for f in flags):
            flags.append(STAND_IN_TRAINED_POLICY if command.program == "lerobot-train" else STAND_IN_POLICY)
    runtime_flags = [f.partition("=")[0] for f in flags if PLACEHOLDER in f]
    return [f for f in flags if PLACEHOLDER not in f], runtime_flags


def checkable_with_stand_in(flag: str) -> bool:
    """False for --policy.path, for policy flags that depend on the checkpoint's type, and for
    `--policy.type=lerobot_bridge`, which needs LeRobot's own Python to check."""
    name = flag.partition("=")[0]
    if flag == "--policy.type=lerobot_bridge":
        return False
    if not name.startswith("--policy."):
        return True
    common = {field.name for field in dataclasses.fields(PreTrainedConfig)} | {"type"}
    return name.removeprefix("--policy.") in common


def config_class(program: str):
    module, name = CONFIG_CLASSES[program]
    return getattr(importlib.import_module(module), name)


def registered_programs() -> set[str]:
    return set(tomllib.loads((REPO / "pyproject.toml").read_text())["project"].get("scripts", {}))


def check_parses(command: DocumentedCommand) -> None:
    args, runtime_flags = parser_args(command)
    if wants_help(args):
        with pytest.raises(HelpRequested, match=f"usage: {command.program}"):
            parse_config(config_class(command.program), args, prog=command.program)
        return
    try:
        cfg = parse_config(config_class(command.program), args, prog=command.program)
    except CliError as exc:
        missing = MISSING_EXTRA_RE.search(str(exc))
        if missing:
            pytest.skip(f"{command.source}: the {missing[1]} extra is not installed here ({exc})")
        pytest.fail(f"{command.source}: `{command}` does not parse: {exc}", pytrace=False)
    for flag in runtime_flags:
        owner = cfg
        for name in flag.removeprefix("--").split("."):
            if not hasattr(owner, name):
                pytest.fail(f"{command.source}: `{command}`: {flag} is not a flag", pytrace=False)
            owner = getattr(owner, name)


# --- tests -----------------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def robosuite_as_documented(monkeypatch):
    """The robosuite release of robomimic's documented install, where this environment has an
    older one (LIBERO's 1.4.0); none stays none, so the missing-extra skip still applies."""
    installed = robomimic_tasks.installed_robosuite()
    if installed is not None and installed != robomimic_tasks.ROBOSUITE_WITH_ALL_TASKS:
        monkeypatch.setattr(
            robomimic_tasks, "installed_robosuite", lambda: robomimic_tasks.ROBOSUITE_WITH_ALL_TASKS
        )


EVAL_COMMANDS = documented_commands("lerobot-eval")
TRAIN_COMMANDS = documented_commands("lerobot-train") + documented_commands("lerobot-record-sim")
SERVE_COMMANDS = documented_commands("lerobot-serve-policy")


def test_documented_commands_exist():
    # Guards against a vacuous pass: the README, the docs, the Dockerfile and the CI smoke jobs
    # all have some.
    eval_sources = {c.source.split(":")[0].split(" ")[0] for c in EVAL_COMMANDS}
    assert {"README.md", "Makefile", "docker/Dockerfile.benchmark.metaworld"} <= eval_sources
    train_sources = {(c.program, c.source.split(":")[0].split(" ")[0]) for c in TRAIN_COMMANDS}
    for program in ("lerobot-train", "lerobot-record-sim"):
        for source in ("docs/source/training.mdx", ".github/workflows/benchmark_tests.yml"):
            assert (program, source) in train_sources, f"no {program} command found in {source}"


@pytest.mark.parametrize("command", EVAL_COMMANDS, ids=lambda c: c.source)
def test_documented_eval_command_parses(command):
    check_parses(command)


@pytest.mark.parametrize("command", TRAIN_COMMANDS, ids=lambda c: f"{c.program} {c.source}")
def test_documented_train_and_record_command_parses(command):
    assert command.program in registered_programs(), (
        f"{command.source}: `{command}` documents {command.program}, which pyproject.toml does not register"
    )
    check_parses(command)


@pytest.mark.parametrize("command", SERVE_COMMANDS, ids=lambda c: c.source)
def test_documented_serve_command_parses(command):
    assert command.program in registered_programs()
    check_parses(command)


def test_serve_commands_are_documented():
    assert {c.source.split(":")[0] for c in SERVE_COMMANDS} >= {
        "README.md",
        "docs/source/remote_policies.mdx",
    }


# --- the finder itself ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("`lerobot-eval` writes eval_info.json", []),
        ("pass a full `lerobot-eval ...` command", []),
        ("lerobot-eval --help", [("--help",)]),
        ("run `lerobot-eval --env.type=metaworld` and wait", [("--env.type=metaworld",)]),
        (
            ".venv/bin/lerobot-eval --env.type=metaworld \\\n    --env.task='push-v3' 2>&1 | tee log",
            [("--env.type=metaworld", "--env.task=push-v3")],
        ),
        ("pip install x && lerobot-eval --a=1 && echo done  # comment", [("--a=1",)]),
        ("lerobot-eval --eval.n_episodes 1 > log", [("--eval.n_episodes", "1")]),
        ("RUN [ -x /bin/lerobot-eval ] && lerobot-eval --a=1", [("--a=1",)]),
        (
            'CMD ["lerobot-eval", "--env.type=metaworld", "--eval.n_episodes=1"]',
            [("--env.type=metaworld", "--eval.n_episodes=1")],
        ),
        ("#   lerobot-eval --a=1 \\\n#     --b=2", [("--a=1", "--b=2")]),
        (
            'lerobot-eval --rename_map=\'{"a": "b"}\' --output_dir="$OUT/x"',
            [('--rename_map={"a": "b"}', f"--output_dir={PLACEHOLDER}/x")],
        ),
    ],
    ids=[
        "prose",
        "prose-ellipsis",
        "help",
        "inline-code",
        "continuation-and-redirection",
        "and-chain-and-comment",
        "redirection-after-a-number",
        "shell-test-brackets",
        "dockerfile-exec-form",
        "commented-continuation",
        "quoting-and-placeholder",
    ],
)
def test_finder_reads_command_lines(text, expected):
    assert [c.args for c in commands_in_text(text, "lerobot-eval", "doc.md")] == expected


def test_stale_flag_fails_naming_file_and_command():
    command = DocumentedCommand(
        "lerobot-eval", "docs/source/x.mdx:3", ("--env.type=metaworld", "--eval.n_epsiodes=1")
    )
    with pytest.raises(
        pytest.fail.Exception,
        match=r"docs/source/x\.mdx:3: `lerobot-eval --env\.type=metaworld --eval\.n_epsiodes=1`",
    ):
        check_parses(command)


def test_stale_flag_with_a_runtime_value_fails():
    command = DocumentedCommand(
        "lerobot-eval", "w.yml", ("--policy.type=random", "--env.type=metaworld", f"--env.tsk={PLACEHOLDER}")
    )
    with pytest.raises(pytest.fail.Exception, match="--env.tsk is not a flag"):
        check_parses(command)


def test_policy_path_is_replaced_by_a_stand_in():
    command = DocumentedCommand(
        "lerobot-eval",
        "doc.md:1",
        (
            "--policy.path",
            PLACEHOLDER,
            "--policy.device=cpu",
            "--policy.n_action_steps=8",
            "--env.type=metaworld",
        ),
    )
    assert parser_args(command) == (["--policy.device=cpu", "--env.type=metaworld", STAND_IN_POLICY], [])
    check_parses(command)


def test_workflow_matrix_and_env_are_expanded(tmp_path, monkeypatch):
    workflow = {
        "env": {"EPISODES": 1},
        "jobs": {
            "smoke": {
                "strategy": {
                    "matrix": {
                        "task": ["push-v3", "reach-v3"],
                        "include": [{"task": "push-v3", "obs": "state"}],
                    }
                },
                "steps": [
                    {
                        "name": "eval",
                        "run": 'lerobot-eval --env.task=${{ matrix.task }} --eval.n_episodes="$EPISODES" \\\n  --out=${{ runner.temp }}',
                    }
                ],
            }
        },
    }
    path = tmp_path / "w.yml"
    path.write_text(yaml.safe_dump(workflow))
    monkeypatch.setattr(f"{__name__}.REPO", tmp_path)
    commands = workflow_commands(path, "lerobot-eval")
    assert [c.args for c in commands] == [
        ("--env.task=push-v3", "--eval.n_episodes=1", f"--out={PLACEHOLDER}"),
        ("--env.task=reach-v3", "--eval.n_episodes=1", f"--out={PLACEHOLDER}"),
    ]
    assert commands[0].source == "w.yml (job smoke, step eval, matrix task=push-v3, obs=state)"


def test_steps_of_other_matrix_entries_are_left_out(tmp_path, monkeypatch):
    """A step guarded by `matrix.<key>` runs only for the entries that have the key."""
    step = {
        "name": "vla",
        "if": "${{ !cancelled() && matrix.checkpoint }}",
        "run": "lerobot-eval --policy.path=${{ matrix.checkpoint }} --env.type=${{ matrix.env }} ${{ matrix.flags }}",
    }
    matrix = {
        "include": [
            {"env": "metaworld", "checkpoint": "user/vla", "flags": "--env.task=push-v3"},
            {"env": "pusht"},
        ]
    }
    path = tmp_path / "w.yml"
    path.write_text(yaml.safe_dump({"jobs": {"smoke": {"strategy": {"matrix": matrix}, "steps": [step]}}}))
    monkeypatch.setattr(f"{__name__}.REPO", tmp_path)
    commands = workflow_commands(path, "lerobot-eval")
    assert [c.args for c in commands] == [
        ("--policy.path=user/vla", "--env.type=metaworld", "--env.task=push-v3")
    ]


@pytest.mark.parametrize(
    ("matrix", "expected"),
    [
        (None, [{}]),
        ("${{ fromJSON(needs.plan.outputs.matrix) }}", [{}]),
        ({"env": ["a", "b"], "exclude": [{"env": "b"}]}, [{"env": "a"}]),
        (
            {"include": [{"env": "a", "task": "x"}, {"env": "b", "task": "y"}]},
            [{"env": "a", "task": "x"}, {"env": "b", "task": "y"}],
        ),
        (
            {"env": ["a"], "include": [{"env": "a", "obs": 1}, {"env": "c"}]},
            [{"env": "a", "obs": 1}, {"env": "c"}],
        ),
    ],
    ids=["none", "computed", "exclude", "include-only", "include-extends-and-adds"],
)
def test_matrix_combinations(matrix, expected):
    assert matrix_combinations({"strategy": {"matrix": matrix}}) == expected
