"""docker-compose.yml and the Dockerfile (issue 4; docs/operations.md).

No Docker engine runs on these machines, so nothing here starts a container. Instead:

* ``docker-compose config -q`` (v1, Debian's ``docker-compose`` package) and ``docker compose config -q``
  (the v2 plugin) check the file when they are installed; each is skipped, saying so, when it is not;
* the file is always validated against the Compose specification's JSON schema (``tests/data/``);
* the command of every service that runs our image must parse with the real ``crawler`` parser, so a
  typo or a command that does not exist fails here, not in production;
* the promises of docs/operations.md are checked on the parsed files: Redis append-only with a volume,
  MongoDB with a volume, workers that ``--scale``, one image, the rules folder mounted where the image
  looks for it, the project installed by pip and run as ``crawler``.
"""

from __future__ import annotations

import contextlib
import copy
import fnmatch
import importlib
import io
import json
import shlex
import shutil
import subprocess
import tomllib
from functools import cache
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parent.parent
COMPOSE_FILE = ROOT / "docker-compose.yml"
DOCKERFILE = ROOT / "Dockerfile"
DOCKERIGNORE = ROOT / ".dockerignore"
CONSTRAINTS = ROOT / "constraints.txt"
SCHEMA_FILE = Path(__file__).resolve().parent / "data" / "compose-spec.json"
IMAGE = "focused-crawler:latest"
COMPOSE_TIMEOUT = 120.0


# --- reading the files ------------------------------------------------------------------------------------


@cache
def compose() -> dict[str, Any]:
    with COMPOSE_FILE.open(encoding="utf-8") as file:
        document = yaml.safe_load(file)
    assert isinstance(document, dict), f"{COMPOSE_FILE} is not a mapping at the top"
    return document


def services() -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = compose()["services"]
    return found


def app_service_names() -> list[str]:
    """The services that run our image (built here, or named focused-crawler:latest)."""
    return sorted(
        name for name, service in services().items() if "build" in service or _runs_our_image(service)
    )


def _runs_our_image(service: dict[str, Any]) -> bool:
    return service.get("image") == IMAGE


@cache
def dockerfile() -> tuple[tuple[str, str], ...]:
    """The Dockerfile's instructions as (INSTRUCTION, arguments): comments dropped, continuations joined."""
    instructions: list[tuple[str, str]] = []
    pending = ""
    for raw in DOCKERFILE.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if pending and line.startswith("#"):
            continue  # a comment line inside a continued instruction
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        line = pending + line
        pending = ""
        keyword, _, arguments = line.partition(" ")
        instructions.append((keyword.upper(), arguments.strip()))
    assert not pending, "the Dockerfile ends inside a continued line"
    return tuple(instructions)


def dockerfile_args(keyword: str) -> list[str]:
    return [arguments for name, arguments in dockerfile() if name == keyword]


def dockerfile_env() -> dict[str, str]:
    env: dict[str, str] = {}
    for arguments in dockerfile_args("ENV"):
        for word in shlex.split(arguments):
            name, equals, value = word.partition("=")
            assert equals, f"ENV {arguments!r}: use the NAME=VALUE form"
            env[name] = value
    return env


def dockerfile_workdir() -> PurePosixPath:
    workdirs = dockerfile_args("WORKDIR")
    assert workdirs, "the Dockerfile sets no WORKDIR"
    return PurePosixPath(workdirs[-1])


def exec_form(keyword: str, arguments: str) -> list[str]:
    """The JSON (exec) form of CMD or ENTRYPOINT: the shell form would put /bin/sh between Docker's
    stop signal and ``crawler``."""
    try:
        argv = json.loads(arguments)
    except json.JSONDecodeError:
        argv = None
    assert isinstance(argv, list), f"{keyword} {arguments}: use the exec form, a JSON list of strings"
    assert all(isinstance(word, str) for word in argv), f"{keyword} {arguments}: only strings"
    return argv


def image_cmd() -> list[str]:
    cmds = dockerfile_args("CMD")
    assert cmds, "the Dockerfile has no CMD"
    return exec_form("CMD", cmds[-1])


def image_entrypoint() -> list[str]:
    entrypoints = dockerfile_args("ENTRYPOINT")
    return exec_form("ENTRYPOINT", entrypoints[-1]) if entrypoints else []


def _words(value: str | list[str] | None) -> list[str] | None:
    if value is None:
        return None
    return shlex.split(value) if isinstance(value, str) else [str(word) for word in value]


def service_argv(service: dict[str, Any]) -> list[str]:
    """What the container runs: the service's entrypoint (else the image's), then its command (else the
    image's CMD, which Compose drops when the service sets an entrypoint)."""
    entrypoint = _words(service.get("entrypoint"))
    command = _words(service.get("command"))
    if entrypoint is None:
        return image_entrypoint() + (command if command is not None else image_cmd())
    return entrypoint + (command or [])


def crawler_argv_problem(argv: list[str]) -> str | None:
    """None when ``argv`` is a real ``crawler`` command line, else what is wrong with it."""
    if not argv or argv[0] != "crawler":
        return f"{argv} does not run the `crawler` console script (argv[0] must be 'crawler')"
    from crawler.cli.main import (
        build_parser,  # here: a broken import fails the command checks, not the others
    )

    output = io.StringIO()
    try:
        with contextlib.redirect_stderr(output), contextlib.redirect_stdout(output):
            args = build_parser().parse_args(argv[1:])
    except SystemExit as exc:
        said = " ".join(output.getvalue().split())
        return f"`{shlex.join(argv)}` is not a crawler command (exit {exc.code}): {said}"
    module, _, function = str(getattr(args, "handler", "")).partition(":")
    if not module or not callable(getattr(importlib.import_module(module), function, None)):
        return f"`{shlex.join(argv)}` names no crawler command"
    return None


def mounts(service: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The service's volumes by target path, each in the long form (type, source, target, read_only)."""
    found: dict[str, dict[str, Any]] = {}
    for volume in service.get("volumes", []):
        if isinstance(volume, str):
            parts = volume.split(":")
            source, target = (None, parts[0]) if len(parts) == 1 else (parts[0], parts[1])
            kind = "bind" if source and source.startswith((".", "/", "~")) else "volume"
            read_only = len(parts) > 2 and "ro" in parts[2].split(",")
            mount: dict[str, Any] = {"type": kind, "source": source, "target": target, "read_only": read_only}
        else:
            mount = dict(volume)
        found[str(mount["target"])] = mount
    return found


def named_volume(service: dict[str, Any], target: str) -> str:
    """The named volume mounted on ``target``, declared at the top of the file."""
    mount = mounts(service).get(target)
    assert mount is not None, f"nothing is mounted on {target}"
    assert mount["type"] == "volume" and mount.get("source"), f"{target} is not on a named volume: {mount}"
    source = str(mount["source"])
    assert source in (compose().get("volumes") or {}), f"volume {source!r} is not declared under volumes:"
    return source


def environment(service: dict[str, Any]) -> dict[str, str]:
    env = service.get("environment") or {}
    if isinstance(env, list):
        return dict(item.partition("=")[::2] for item in env)
    return {str(name): str(value) for name, value in env.items()}


# --- (a) Compose itself, where it is installed ------------------------------------------------------------


def _compose_tool(name: str) -> tuple[list[str] | None, str]:
    """The command line of ``name`` and "", or None and why it cannot be used here."""
    if name == "docker-compose":
        if shutil.which("docker-compose") is None:
            return None, "docker-compose (v1, Debian's docker-compose package) is not on PATH"
        tool = ["docker-compose"]
    else:
        if shutil.which("docker") is None:
            return None, "docker is not on PATH, so neither is the `docker compose` plugin (v2)"
        tool = ["docker", "compose"]
    try:
        probe = subprocess.run(
            [*tool, "version"], capture_output=True, text=True, timeout=COMPOSE_TIMEOUT, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"`{' '.join(tool)} version` did not run: {exc}"
    if probe.returncode != 0:
        said = " ".join((probe.stderr or probe.stdout).split())[:200]
        return None, f"`{' '.join(tool)} version` failed (the tool is missing or broken): {said}"
    return tool, ""


@pytest.mark.parametrize("name", ["docker-compose", "docker compose"])
def test_compose_config_accepts_the_file(name: str) -> None:
    tool, why = _compose_tool(name)
    if tool is None:
        pytest.skip(why)
    result = subprocess.run(
        [*tool, "--project-directory", str(ROOT), "-f", str(COMPOSE_FILE), "config", "-q"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=COMPOSE_TIMEOUT,
        check=False,
    )
    assert result.returncode == 0, f"`{name} config -q` rejected {COMPOSE_FILE.name}:\n{result.stderr}"


# --- (b) the Compose specification's JSON schema, always ---------------------------------------------------


def _schema_errors(document: Any) -> list[str]:
    # Imported by name: jsonschema ships no type information, and mypy must not depend on its stubs.
    jsonschema = importlib.import_module("jsonschema")
    schema = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    # It names its draft as "http://json-schema.org/draft/2019-09/schema#", a spelling jsonschema does not
    # look up (it knows the https one): say the draft here rather than edit the vendored file.
    assert "/draft/2019-09/" in schema["$schema"], f"{SCHEMA_FILE.name}: unexpected draft {schema['$schema']}"
    validator_class = jsonschema.Draft201909Validator
    validator_class.check_schema(schema)
    validator = validator_class(schema)
    errors = sorted(validator.iter_errors(document), key=lambda error: list(error.absolute_path))
    return [f"{'/'.join(map(str, error.absolute_path)) or '(top)'}: {error.message}" for error in errors]


def test_compose_file_follows_the_compose_specification() -> None:
    errors = _schema_errors(compose())
    assert not errors, f"{COMPOSE_FILE.name} breaks the Compose specification:\n" + "\n".join(errors)


def test_the_schema_catches_mistakes_and_needs_no_version_key() -> None:
    """The check above is worth something: the vendored schema refuses an unknown key and a wrong type,
    and takes the modern layout with no top-level ``version``."""
    assert "version" not in compose()
    assert "version" not in json.loads(SCHEMA_FILE.read_text(encoding="utf-8")).get("required", [])
    typo = copy.deepcopy(compose())
    typo["services"]["worker"]["comand"] = typo["services"]["worker"].pop("command")
    assert any("comand" in error for error in _schema_errors(typo))
    wrong_type = copy.deepcopy(compose())
    wrong_type["services"]["redis"]["healthcheck"]["retries"] = "ten"
    assert _schema_errors(wrong_type)


# --- (c) every command is a real `crawler` command ---------------------------------------------------------


def test_there_are_crawler_services() -> None:
    assert {"scheduler", "worker"} <= set(app_service_names())


@pytest.mark.parametrize("name", app_service_names())
def test_service_runs_a_real_crawler_command(name: str) -> None:
    problem = crawler_argv_problem(service_argv(services()[name]))
    assert problem is None, f"service {name!r}: {problem}"


def test_image_cmd_is_a_real_crawler_command() -> None:
    problem = crawler_argv_problem(image_entrypoint() + image_cmd())
    assert problem is None, f"the Dockerfile's CMD: {problem}"


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (
            ["crawler", "wroker"],
            ("`crawler wroker` is not a crawler command (exit 2): ", "invalid choice: 'wroker'"),
        ),
        (["crawlr", "worker"], ("['crawlr', 'worker'] does not run the `crawler` console script",)),
        (["crawler"], ("`crawler` is not a crawler command (exit 2): ", "arguments are required: COMMAND")),
        (
            ["crawler", "worker", "--no-such-option"],
            ("`crawler worker --no-such-option` is not", "unrecognized arguments: --no-such-option"),
        ),
        ([], ("[] does not run the `crawler` console script",)),
    ],
    ids=["unknown_command", "another_script", "no_command", "unknown_option", "no_command_line"],
)
def test_the_command_check_refuses_what_is_not_a_crawler_command(
    argv: list[str], said: tuple[str, ...]
) -> None:
    """Refused, each for its own reason: a name of no command, another console script, no command, an
    option the command does not take, no command line."""
    problem = crawler_argv_problem(argv) or ""
    assert problem.startswith(said[0]) and all(part in problem for part in said[1:]), problem


def test_the_command_check_accepts_real_commands() -> None:
    assert crawler_argv_problem(["crawler", "worker"]) is None
    assert crawler_argv_problem(["crawler", "rules", "check"]) is None


def test_the_scheduler_and_the_worker_run_their_commands() -> None:
    assert service_argv(services()["scheduler"]) == ["crawler", "schedule"]
    assert service_argv(services()["worker"]) == ["crawler", "worker"]


# --- (d) the promises of docs/operations.md ---------------------------------------------------------------


def test_redis_is_append_only_on_a_volume_with_a_healthcheck() -> None:
    redis = services()["redis"]
    assert str(redis["image"]).split(":")[0] == "redis"
    command = _words(redis.get("command")) or []
    assert "--appendonly" in command, f"redis runs {command}: no --appendonly"
    assert command[command.index("--appendonly") + 1] == "yes"
    named_volume(redis, "/data")
    assert "redis-cli" in (_words(redis["healthcheck"]["test"]) or [])


def test_mongo_keeps_its_data_on_a_volume_with_a_healthcheck() -> None:
    mongo = services()["mongo"]
    assert str(mongo["image"]).split(":")[0] == "mongo"
    named_volume(mongo, "/data/db")
    assert "mongosh" in (_words(mongo["healthcheck"]["test"]) or [])


def test_images_are_pinned_by_major_version() -> None:
    assert services()["redis"]["image"] == "redis:7"
    assert services()["mongo"]["image"] == "mongo:7"
    assert dockerfile_args("FROM") == ["python:3.11-slim"]


def test_workers_can_scale() -> None:
    worker = services()["worker"]
    assert "container_name" not in worker, "a fixed container_name allows one worker only"
    assert not worker.get("ports"), "a host port can be bound by one worker only"
    assert "hostname" not in worker, "every worker would claim the same host name"
    assert "scale" not in worker, "`--scale worker=N` sets the number of workers"
    for target, mount in mounts(worker).items():
        assert mount["type"] != "volume" or mount.get("source"), f"{target}: an anonymous volume per worker"


def test_scheduler_and_workers_share_one_image_built_here() -> None:
    for name in app_service_names():
        service = services()[name]
        assert service.get("image") == IMAGE, f"service {name!r} runs {service.get('image')!r}, not {IMAGE}"
        build = service.get("build")
        assert build, f"service {name!r} does not build the image"
        options: dict[str, Any] = {"context": build} if isinstance(build, str) else build
        context, dockerfile_name = str(options["context"]), str(options.get("dockerfile", "Dockerfile"))
        assert (ROOT / context).resolve() == ROOT, f"service {name!r} builds from {context!r}"
        assert (ROOT / context / dockerfile_name).resolve() == DOCKERFILE


def test_app_services_wait_for_healthy_redis_and_those_that_store_for_mongo() -> None:
    for name in app_service_names():
        depends_on = services()[name].get("depends_on") or {}
        # The scheduler queues requests and stores nothing: MongoDB down must not hold the grabs back.
        for needed in ("redis",) if name == "scheduler" else ("redis", "mongo"):
            assert isinstance(depends_on, dict), f"service {name!r}: depends_on must say the condition"
            condition = (depends_on.get(needed) or {}).get("condition")
            assert condition == "service_healthy", (
                f"service {name!r} does not wait for {needed} to be healthy"
            )
            assert "healthcheck" in services()[needed]


def test_the_scheduler_does_not_wait_for_mongo() -> None:
    assert "mongo" not in (services()["scheduler"].get("depends_on") or {})


def test_the_image_installs_pinned_versions_of_every_runtime_dependency() -> None:
    pins: dict[str, Version] = {}
    for raw in CONSTRAINTS.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        requirement = Requirement(line)
        (specifier,) = requirement.specifier
        assert specifier.operator == "==", f"{CONSTRAINTS.name}: {line!r} is not pinned to one version"
        pins[canonicalize_name(requirement.name)] = Version(specifier.version)
    with (ROOT / "pyproject.toml").open("rb") as file:
        dependencies = tomllib.load(file)["project"]["dependencies"]
    for dependency in dependencies:
        requirement = Requirement(dependency)
        pinned = pins.get(canonicalize_name(requirement.name))
        assert pinned is not None, f"{requirement.name} is not pinned in {CONSTRAINTS.name}"
        assert requirement.specifier.contains(pinned), (
            f"{CONSTRAINTS.name} pins {requirement.name} {pinned}, outside {requirement.specifier}"
        )
    installs = [arguments for arguments in dockerfile_args("RUN") if "pip install" in arguments]
    assert any(
        "--constraint" in words and words[words.index("--constraint") + 1].endswith(CONSTRAINTS.name)
        for words in (shlex.split(arguments) for arguments in installs)
    ), f"the Dockerfile's pip install does not use {CONSTRAINTS.name}"
    assert any(CONSTRAINTS.name in arguments.split()[:-1] for arguments in dockerfile_args("COPY"))


def test_long_running_services_restart() -> None:
    for name in ("redis", "mongo", "scheduler", "worker"):
        assert services()[name].get("restart") in {"always", "unless-stopped", "on-failure"}, name


def test_app_services_reach_redis_and_mongo_by_service_name() -> None:
    for name in app_service_names():
        env = environment(services()[name])
        redis_url, mongo_uri = urlsplit(env["REDIS_URL"]), urlsplit(env["MONGO_URI"])
        assert (redis_url.scheme, redis_url.hostname) == ("redis", "redis"), f"{name}: {env['REDIS_URL']}"
        assert (mongo_uri.scheme, mongo_uri.hostname) == ("mongodb", "mongo"), f"{name}: {env['MONGO_URI']}"
        assert env.get("MONGO_DB_PREFIX"), f"{name}: MONGO_DB_PREFIX is not set"


def test_rules_and_data_are_mounted_where_the_image_looks() -> None:
    image_env = dockerfile_env()
    rules_dir, data_dir = image_env.get("CRAWLER_RULES_DIR"), image_env.get("CRAWLER_DATA_DIR")
    assert rules_dir and data_dir, "the Dockerfile must set CRAWLER_RULES_DIR and CRAWLER_DATA_DIR"
    workdir = dockerfile_workdir()
    assert PurePosixPath(rules_dir) == workdir / "rules", "the rules folder is ./rules of the WORKDIR"
    for name in app_service_names():
        service = services()[name]
        env = environment(service)
        assert env.get("CRAWLER_RULES_DIR", rules_dir) == rules_dir, f"{name}: another rules folder"
        assert env.get("CRAWLER_DATA_DIR", data_dir) == data_dir, f"{name}: another data folder"
        rules = mounts(service).get(rules_dir)
        assert rules is not None, f"service {name!r} does not mount the rules folder on {rules_dir}"
        assert rules["type"] == "bind" and (ROOT / str(rules["source"])).resolve() == ROOT / "rules"
        assert rules.get("read_only") is True, f"service {name!r} mounts the rules writable"
        named_volume(service, data_dir)


def test_the_image_installs_the_project_and_runs_as_a_user() -> None:
    copied_to = [
        arguments.split()[-1] for arguments in dockerfile_args("COPY") if "pyproject.toml" in arguments
    ]
    assert copied_to, "the Dockerfile does not copy pyproject.toml"
    source_dir = copied_to[0].rstrip("/") or "/"
    installs = [arguments for arguments in dockerfile_args("RUN") if "pip install" in arguments]
    assert installs, "no `pip install` of the project"
    assert any(word.rstrip("/") == source_dir for arguments in installs for word in shlex.split(arguments)), (
        f"no RUN pip install of {source_dir}, where pyproject.toml was copied"
    )
    users = dockerfile_args("USER")
    assert users and users[-1].split(":")[0] not in {"root", "0"}, "the image runs as root"
    user = users[-1].split(":")[0]
    data_dir = dockerfile_env()["CRAWLER_DATA_DIR"]
    assert any(
        "chown" in arguments and user in arguments and data_dir in arguments
        for arguments in dockerfile_args("RUN")
    ), f"{data_dir} is not given to {user}: a fresh named volume there would not be writable"
    assert image_cmd()[0] == "crawler" or image_entrypoint()[:1] == ["crawler"]


def _dockerignored(name: str) -> bool:
    """Whether .dockerignore keeps the top-level entry ``name`` out of the build context (last match wins)."""
    ignored = False
    for raw in DOCKERIGNORE.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        keep = line.startswith("!")
        pattern = line.lstrip("!").strip("/")
        if fnmatch.fnmatchcase(name, pattern):
            ignored = not keep
    return ignored


def test_the_build_context_holds_what_the_dockerfile_copies_and_no_more() -> None:
    for arguments in dockerfile_args("COPY"):
        words = [word for word in shlex.split(arguments) if not word.startswith("--")]
        for source in words[:-1]:
            top = PurePosixPath(source).parts[0]
            assert (ROOT / top).exists(), f"COPY {source}: no such file in the project"
            assert not _dockerignored(top), f"COPY {source}: .dockerignore leaves it out of the build context"
    for heavy in (".venv", ".git", "data", "tests", ".mypy_cache"):
        assert _dockerignored(heavy), f".dockerignore sends {heavy} to the Docker daemon"
