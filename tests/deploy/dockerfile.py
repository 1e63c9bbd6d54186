"""The Dockerfile read as Docker reads it, and built by running its own steps, without Docker.

    image = Dockerfile.read(ROOT / "Dockerfile")
    built = image.build(context=ROOT, into=scratch, python="/usr/bin/python3.11")
    built.run(["scheduler", "--help"])     # ENTRYPOINT + these, as the image's USER

There is no Docker daemon in CI, so the steps run on this machine, and the
Dockerfile stays the one source: nothing here knows what the image holds.
Each stage gets a directory of its own as its "/", and every stage's is at
the same path (the one before is moved aside when the next begins), so a
virtual environment made in one stage and copied into the next keeps valid
paths, as it does in the image. The base image is a clean virtual environment
of this machine's Python of the base's minor version, first on PATH as
/usr/local/bin is in python:*-slim.

Every absolute path in a step is the stage's: WORKDIR, COPY's destination,
ENV values, and the paths in RUN's shell text are moved under the stage's
directory. groupadd and useradd are instead given shadow's own `--prefix`,
so they write the stage's /etc/passwd, never this machine's. COPY reads the
context through .dockerignore. The environment is the base image's plus the
proxy and package index settings a `docker build` would be given, and no
pip.conf of this machine's. An instruction, flag or form not known here
fails the build: a new kind of step must be taught here, not skipped.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

PASSED_ON = (
    "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy",
    "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_TRUSTED_HOST", "PIP_CERT", "PIP_DEFAULT_TIMEOUT",
    "SSL_CERT_FILE", "SSL_CERT_DIR",
)  # fmt: skip
"""What a build may take from this machine's environment: how to reach PyPI, as the proxy
build arguments do for `docker build`."""
STEP_TIMEOUT_S = 300
_ABSOLUTE = re.compile(r"(?<![^\s=:\"'(])/(?!/)")
"""A path's leading slash: at the start, or after a space, =, :, a quote or (; not //."""
_VARIABLE = re.compile(r"\$(?:\{(\w+)\}|(\w+))")
_SEPARATORS = re.compile(r"(&&|;)")
_USER_DATABASE = ("groupadd", "useradd")
# What a Debian base has in its user database, as far as a build can tell.
_ETC = {
    "passwd": "root:x:0:0:root:/root:/bin/sh\n"
    "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
    "group": "root:x:0:\nnogroup:x:65534:\n",
    "shadow": "root:*:20000:0:99999:7:::\nnobody:*:20000:0:99999:7:::\n",
    "gshadow": "root:*::\nnogroup:*::\n",
}


class Unsupported(AssertionError):
    """The Dockerfile uses something this reader does not know: teach it, do not skip it."""


@dataclass(frozen=True)
class Instruction:
    keyword: str
    arguments: str
    line: int

    def fail(self, why: str) -> Unsupported:
        return Unsupported(f"Dockerfile line {self.line}: {self.keyword} {self.arguments}: {why}")


@dataclass(frozen=True)
class Stage:
    base: str
    """FROM's image, build arguments substituted."""
    name: str
    steps: tuple[Instruction, ...]


@dataclass(frozen=True)
class Dockerfile:
    stages: tuple[Stage, ...]

    @classmethod
    def read(cls, path: Path) -> Dockerfile:
        arguments: dict[str, str] = {}
        stages: list[tuple[str, str, list[Instruction]]] = []
        for instruction in instructions(path.read_text()):
            if instruction.keyword == "ARG" and not stages:
                name, _, default = instruction.arguments.partition("=")
                arguments[name.strip()] = default.strip()
            elif instruction.keyword == "FROM":
                words = instruction.arguments.split()
                if len(words) not in (1, 3) or (len(words) == 3 and words[1].upper() != "AS"):
                    raise instruction.fail("not `FROM image [AS name]`")
                base = _expand(words[0], arguments)
                stages.append((base, words[2] if len(words) == 3 else str(len(stages)), []))
            elif not stages:
                raise instruction.fail("only ARG may come before the first FROM")
            else:
                stages[-1][2].append(instruction)
        return cls(tuple(Stage(base, name, tuple(steps)) for base, name, steps in stages))

    def build(self, context: Path, into: Path, python: str) -> Built:
        """Every stage's steps in order; the last stage is the image."""
        base = into / "base"
        _run([python, "-m", "venv", str(base)], cwd=into, env={"PATH": "/usr/bin:/bin"})
        root = into / "root"
        finished: dict[str, Path] = {}
        ignored = dockerignore(context)
        built: Built | None = None
        for index, stage in enumerate(self.stages):
            if built is not None:  # the stage before moves aside; COPY --from reads it there
                root.rename(finished[self.stages[index - 1].name])
            built = Built(root, _base_environment(base, root), root)
            _seed(root)
            for step in stage.steps:
                built.step(step, context, ignored, finished)
            finished[stage.name] = into / f"stage-{index}"
        assert built is not None, "the Dockerfile has no FROM"
        return built


@dataclass
class Built:
    """One stage's filesystem and settings, as its steps leave them (the last: the image)."""

    root: Path
    env: dict[str, str]
    workdir: Path
    user: str | None = None
    entrypoint: list[str] = field(default_factory=list)
    cmd: list[str] = field(default_factory=list)
    exposed: list[str] = field(default_factory=list)

    def path(self, absolute: str) -> Path:
        """Where the image's `absolute` path is here."""
        return self.root / absolute.lstrip("/")

    def step(
        self, step: Instruction, context: Path, ignored: Callable[[str], bool],
        finished: Mapping[str, Path],
    ) -> None:  # fmt: skip
        keyword, arguments = step.keyword, step.arguments
        if keyword == "RUN":
            if arguments.startswith(("[", "--")):
                raise step.fail("only the shell form without flags is known here")
            _run(["/bin/sh", "-c", self._shell(arguments)], cwd=self.workdir, env=self.env,
                 what=f"Dockerfile line {step.line}")  # fmt: skip
        elif keyword == "ENV":
            before = dict(self.env)  # each value sees the environment before this ENV
            for word in shlex.split(arguments):
                name, equals, value = word.partition("=")
                if not equals:
                    raise step.fail("only `ENV NAME=value ...` is known here")
                self.env[name] = _expand(self._moved(value), before)
        elif keyword == "WORKDIR":
            self.workdir = self._at(arguments)
            self.workdir.mkdir(parents=True, exist_ok=True)
        elif keyword == "COPY":
            self._copy(step, context, ignored, finished)
        elif keyword == "USER":
            self.user = arguments
        elif keyword == "EXPOSE":
            self.exposed.extend(arguments.split())
        elif keyword in ("ENTRYPOINT", "CMD"):
            if not arguments.startswith("["):
                raise step.fail("only the exec (JSON) form is known here")
            setattr(self, keyword.lower(), json.loads(arguments))
        else:
            raise step.fail("not an instruction this reader knows")

    def _moved(self, text: str) -> str:
        return _ABSOLUTE.sub(f"{self.root}/", text)

    def _at(self, path: str) -> Path:
        return Path(self._moved(path)) if path.startswith("/") else self.workdir / path

    def _shell(self, text: str) -> str:
        """RUN's text with its paths moved under the stage, and the user database commands
        pointed at the stage's /etc."""
        parts = _SEPARATORS.split(text)
        for i in range(0, len(parts), 2):
            words = parts[i].split(maxsplit=1)
            if words and words[0] in _USER_DATABASE:
                parts[i] = f" {words[0]} --prefix {self.root} {words[1] if len(words) > 1 else ''}"
            else:
                parts[i] = self._moved(parts[i])
        return "".join(parts)

    def _copy(
        self, step: Instruction, context: Path, ignored: Callable[[str], bool],
        finished: Mapping[str, Path],
    ) -> None:  # fmt: skip
        words = shlex.split(step.arguments)
        flags = [w for w in words if w.startswith("--")]
        paths = [w for w in words if not w.startswith("--")]
        source_root, from_context = context, True
        for flag in flags:
            name, _, value = flag.partition("=")
            if name != "--from" or value not in finished:
                raise step.fail(f"{flag}: only --from=<an earlier stage> is known here")
            source_root, from_context = finished[value], False
        *sources, destination = paths
        target = self._at(destination)
        into_directory = destination.endswith("/") or len(sources) > 1
        for source in sources:
            relative = source.lstrip("/").rstrip("/") or "."
            origin = source_root / relative
            if from_context and ignored(relative):
                raise step.fail(f"{source} is excluded by .dockerignore")
            if origin.is_dir():
                keep = _context_filter(context, ignored) if from_context else None
                shutil.copytree(origin, target, symlinks=True, dirs_exist_ok=True, ignore=keep)
            else:
                copied = target / origin.name if into_directory else target
                copied.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(origin, copied)

    def passwd(self) -> dict[str, list[str]]:
        """The stage's /etc/passwd, by uid."""
        entries = (line.split(":") for line in self.path("/etc/passwd").read_text().splitlines())
        return {entry[2]: entry for entry in entries if len(entry) == 7}

    def run(
        self, arguments: Sequence[str] = (), *, entrypoint: Sequence[str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        """ENTRYPOINT (or `entrypoint`) with `arguments` (default: CMD), as the image would
        start it: its USER, its WORKDIR, its environment with HOME from its passwd."""
        command = [*(self.entrypoint if entrypoint is None else entrypoint)]
        command += list(arguments) or self.cmd
        executable = shutil.which(command[0], path=self.env["PATH"])
        assert executable is not None, f"{command[0]} is not on the image's PATH"
        uid, _, gid = (self.user or "0").partition(":")
        home = self.passwd()[uid][5]
        env = {**self.env, "HOME": str(self.path(home))}
        return subprocess.run(
            [executable, *command[1:]], cwd=self.workdir, env=env, user=int(uid),
            group=int(gid or uid), extra_groups=[], capture_output=True, text=True,
            timeout=STEP_TIMEOUT_S,
        )  # fmt: skip


def instructions(text: str) -> list[Instruction]:
    """The Dockerfile's instructions, continuation lines joined, comments and blanks gone."""
    found: list[Instruction] = []
    pending, start = "", 0
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if not pending:
            start = number
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        keyword, _, arguments = (pending + line).partition(" ")
        found.append(Instruction(keyword.upper(), arguments.strip(), start))
        pending = ""
    return found


def dockerignore(context: Path) -> Callable[[str], bool]:
    """Whether a context path (relative, with /) is left out of the build: the last pattern
    that matches it or a directory above it decides, a `!` pattern taking it back."""
    patterns: list[tuple[bool, re.Pattern[str]]] = []
    ignore_file = context / ".dockerignore"
    lines = ignore_file.read_text().splitlines() if ignore_file.exists() else []
    for raw in lines:
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        negated = line.startswith("!")
        cleaned = os.path.normpath(line.lstrip("!").strip()).lstrip("/")
        patterns.append((negated, re.compile(_glob(cleaned))))

    def ignored(relative: str) -> bool:
        parts = relative.split("/")
        prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
        excluded = False
        for negated, pattern in patterns:
            if any(pattern.fullmatch(prefix) for prefix in prefixes):
                excluded = not negated
        return excluded

    return ignored


def _glob(pattern: str) -> str:
    """A .dockerignore pattern as a regular expression (Go's filepath.Match, and `**`)."""
    out, i = "", 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out, i = out + "(?:.*/)?", i + 3
        elif pattern.startswith("**", i):
            out, i = out + ".*", i + 2
        elif pattern[i] == "*":
            out, i = out + "[^/]*", i + 1
        elif pattern[i] == "?":
            out, i = out + "[^/]", i + 1
        else:
            out, i = out + re.escape(pattern[i]), i + 1
    return out


def _context_filter(
    context: Path, ignored: Callable[[str], bool]
) -> Callable[[str, list[str]], Iterable[str]]:
    def skip(directory: str, names: list[str]) -> list[str]:
        here = Path(directory).relative_to(context).as_posix()
        return [name for name in names if ignored(f"{here}/{name}" if here != "." else name)]

    return skip


def _expand(text: str, values: Mapping[str, str]) -> str:
    return _VARIABLE.sub(lambda m: values.get(m[1] or m[2], ""), text)


def _base_environment(base: Path, root: Path) -> dict[str, str]:
    env = {name: os.environ[name] for name in PASSED_ON if name in os.environ}
    env.update(
        PATH=f"{base}/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        LANG="C.UTF-8",
        HOME=str(root / "root"),
        PIP_CONFIG_FILE=os.devnull,  # the image has no pip.conf; this machine's is not read
    )
    return env


def _seed(root: Path) -> None:
    """A fresh stage's "/": the base's user database and root's home."""
    (root / "etc").mkdir(parents=True)
    (root / "root").mkdir(mode=0o700)
    for name, content in _ETC.items():
        (root / "etc" / name).write_text(content)


def _run(command: Sequence[str], cwd: Path, env: Mapping[str, str], what: str = "") -> None:
    done = subprocess.run(
        command, cwd=cwd, env=env, capture_output=True, text=True, timeout=STEP_TIMEOUT_S
    )
    if done.returncode != 0:
        raise AssertionError(
            f"{what or command[0]} failed ({done.returncode}): {' '.join(command)}\n"
            f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        )
