"""How self-tests run the suite's command lines (issue 57): in this process where they can, in a child process only
where the process boundary is what is tested.

In this process:
- :func:`pytest_inprocess`: ``pytest ARGS`` as ``pytest.main`` in a folder (synthetic claim tests), its output captured;
- :func:`collected`: the node ids of one ``pytest claims -m gpu --zoo tiny --collect-only`` per set of extra
  arguments, kept for the session (the whole-tree collection many tests read);
- :func:`run_cli`: ``python -m reports|models ARGS`` as the module's ``main(argv)``, its output captured;
- :func:`startup_error`: the startup checks of ``pytest claims ARGS`` (``fixtures.settings.resolve_settings`` on the
  options parsed as pytest parses them), without starting pytest.

In a child process (this module is the one place tests start one):
- :func:`child`: ``python ARGS`` with the repository on the path, to its end; :func:`spawn`: started and left running;
- :func:`pytest_child`: ``python -m pytest ARGS``; outside the repository the plugin comes by ``-p conftest``;
- :func:`claims_run`: ``pytest claims -m gpu --model tiny-w96 ARGS`` and its wall seconds;
- :func:`program`: another program (git, bash, actionlint), whose own behaviour the test reads.
"""

import argparse
import contextlib
import functools
import io
import os
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

REPO = Path(__file__).resolve().parent.parent
CLIS = ("reports", "models")  # the modules run_cli runs: each has main(argv) -> exit status


def run_cli(module: str, *args) -> subprocess.CompletedProcess:
    """``python -m MODULE ARGS`` in this process: ``MODULE.__main__.main(argv)``, stdout and stderr captured; argparse's
    exits (``--help``: 0, a usage error: 2) become the exit status.

    Raises:
        ValueError: for a module other than ``CLIS``.
    """
    if module not in CLIS:
        raise ValueError(f"run_cli runs {', '.join(CLIS)}, not {module!r}")
    main = __import__(f"{module}.__main__", fromlist=["main"]).main
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main([str(a) for a in args])
        except SystemExit as stop:
            code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
    return subprocess.CompletedProcess(["python", "-m", module, *map(str, args)], code, out.getvalue(), err.getvalue())


def startup_error(*args: str) -> str | None:
    """The usage error ``pytest claims -m gpu ARGS`` stops with at startup (exit status 4), or None where its
    options pass: the plugin's options parsed as pytest's argparse parses them, then every startup check
    (``fixtures.settings.resolve_settings``). Nothing is created, as in the real start."""
    from fixtures.docs_pages import declared_options
    from fixtures.settings import resolve_settings

    class Parser(argparse.ArgumentParser):
        def error(self, message):  # pytest's parser turns argparse's errors into usage errors too
            raise pytest.UsageError(message)

    parser = Parser(add_help=False)
    for names, attrs in declared_options():  # the plugin's option group, as pytest --help shows it
        parser.add_argument(*names, **attrs)
    try:
        options = parser.parse_args(list(args))
        config = SimpleNamespace(getoption=lambda dest: getattr(options, dest), args=["claims"],
                                 option=SimpleNamespace(markexpr="gpu", keyword=""))
        resolve_settings(config)
    except pytest.UsageError as err:
        return str(err)
    return None


def pytest_inprocess(*args, cwd: Path = REPO, env: dict | None = None) -> subprocess.CompletedProcess:
    """``pytest ARGS`` run in ``cwd`` as ``pytest.main`` in this process, the plugin loaded as a user's pytest loads it
    (from another folder by ``-p conftest``): what :func:`pytest_child` gives without a new interpreter.

    The run has its own config, session and stash; its terminal output and stderr are captured. Afterwards these are
    as they were (pytest's ``MonkeyPatch`` undoes the first two): the working folder, the variables it set
    (``PYTHONPATH`` and ``env``), ``sys.path``, the global torch generator (the plugin seeds it),
    the modules it imported again under a name already held (pytest re-imports the root ``conftest``), and the
    plugin's per-process fingerprint cache; the test modules it imported from ``cwd`` are forgotten (the synthetic
    cases of several folders share module names). Not restored: the plugin's SIGTERM handler stays this session's (it
    is installed once per process), and its ``gc.freeze`` keeps what the run left alive out of the collector's scans,
    as at this session's start.

    Args:
        args: pytest's arguments (paths relative to ``cwd``).
        cwd: the repository (the default), or a folder outside it holding the test files.
        env: variables set for the run (and for the processes it starts: xdist's workers).
    Returns:
        a ``CompletedProcess`` with pytest's exit status and its captured stdout and stderr.
    """
    import torch

    from fixtures.collector import model_fingerprint

    out, err, modules, path = io.StringIO(), io.StringIO(), dict(sys.modules), list(sys.path)
    generator = torch.random.get_rng_state()
    with pytest.MonkeyPatch.context() as patch, contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        for name, value in {"PYTHONPATH": str(REPO), **(env or {})}.items():
            patch.setenv(name, str(value))
        patch.chdir(cwd)
        try:
            plugin = () if Path(cwd) == REPO else ("-p", "conftest")
            code = int(pytest.main([*plugin, *map(str, args)]))
        finally:
            sys.path[:] = path
            torch.random.set_rng_state(generator)
            model_fingerprint.cache_clear()
            for name in set(sys.modules) - set(modules):
                if Path(cwd) != REPO and str(getattr(sys.modules[name], "__file__", None) or "").startswith(str(cwd)):
                    del sys.modules[name]
            sys.modules.update({name: module for name, module in modules.items() if sys.modules.get(name) is not module})
    return subprocess.CompletedProcess(["pytest", *map(str, args)], code, out.getvalue(), err.getvalue())


def child(args: list[str], *, cwd: Path = REPO, env: dict | None = None, timeout: float = 900
          ) -> tuple[subprocess.CompletedProcess, float]:
    """``python ARGS`` in a child process with the repository on PYTHONPATH: for tests of what only a real process
    shows (signals, exit statuses, a killed worker, peak memory). Returns the finished process and its wall seconds.

    Raises:
        subprocess.TimeoutExpired: past ``timeout`` seconds.
    """
    start = time.perf_counter()
    done = subprocess.run([sys.executable, *map(str, args)], cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})})
    return done, time.perf_counter() - start


def program(argv: list, *, cwd: Path = REPO, check: bool = False, timeout: float = 120) -> subprocess.CompletedProcess:
    """Run another program (not this project's Python) to its end, output captured as text: git for a checkout the
    run records, bash for a glob as the workflow's shell expands it, actionlint on the workflow.

    Raises:
        subprocess.CalledProcessError: with ``check``, where it exits non-zero.
        subprocess.TimeoutExpired: past ``timeout`` seconds.
    """
    return subprocess.run([str(a) for a in argv], cwd=cwd, capture_output=True, text=True, check=check,
                          timeout=timeout)


def spawn(args: list[str], *, cwd: Path = REPO) -> subprocess.Popen:
    """``python ARGS`` started and left running (stdout and stderr piped, text), for a test that signals or watches
    it; the caller waits for it or kills it."""
    return subprocess.Popen([sys.executable, *map(str, args)], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env={**os.environ, "PYTHONPATH": str(REPO)})


def pytest_child(*args, cwd: Path = REPO, env: dict | None = None, timeout: float = 900) -> subprocess.CompletedProcess:
    """``python -m pytest ARGS`` in a child process; outside the repository the plugin is loaded as ``-p conftest``."""
    plugin = () if cwd == REPO else ("-p", "conftest")
    return child(["-m", "pytest", *plugin, *args], cwd=cwd, env=env, timeout=timeout)[0]


def claims_run(*args: str, env: dict | None = None, timeout: float = 120) -> tuple[subprocess.CompletedProcess, float]:
    """``pytest claims -m gpu --model tiny-w96 ARGS`` from the repository in a child process; returns the process
    and its wall seconds."""
    return child(["-m", "pytest", "claims", "-m", "gpu", "--model", "tiny-w96", *args, "-p", "no:cacheprovider", "-q"],
                 env=env, timeout=timeout)


@functools.cache
def collected(*args: str) -> str:
    """``pytest claims -m gpu --zoo tiny --collect-only -q ARGS``'s output (one node id a line), once per session for
    each ``args``.

    Raises:
        AssertionError: where the collection fails, with its output.
    """
    done = pytest_inprocess("claims", "-m", "gpu", "--zoo", "tiny", "--collect-only", "-q", "-p", "no:cacheprovider",
                            *args)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return done.stdout


def node_ids(output: str) -> set[str]:
    """The node ids in a ``--collect-only -q`` output."""
    return {line for line in output.splitlines() if "::" in line}


def claims_copy(tmp_path: Path, edit: tuple[str, str, str] | None = None) -> Path:
    """A copy of the catalogue and its topic homes (``claims/catalogue.toml``, ``claims/s*/*.toml``) under
    ``tmp_path``, with one text replaced once: ``edit`` = (file relative to claims/, old, new). Returns the copy's
    catalogue path, for ``load_catalogue``."""
    root = REPO / "claims"
    for path in [root / "catalogue.toml", *root.glob("s*/*.toml")]:
        copy = tmp_path / "claims" / path.relative_to(root)
        copy.parent.mkdir(parents=True, exist_ok=True)
        text = path.read_text(encoding="utf-8")
        if edit and path.relative_to(root).as_posix() == edit[0]:
            assert edit[1] in text, f"{edit[1]!r} is not in claims/{edit[0]}"
            text = text.replace(edit[1], edit[2], 1)
        copy.write_text(text, encoding="utf-8")
    return tmp_path / "claims" / "catalogue.toml"
