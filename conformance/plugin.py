"""The pytest plugin: scenario YAML files and vector JSON files become test items.

    pytest scenarios/stmp --target tcp://127.0.0.1:9000
    pytest vectors/

Grades map onto pytest outcomes: FAILED and ERROR fail (NON-STRICT too with
--strict), UNSUPPORTED and NOT-APPLICABLE are skipped (never counted as
passed), PASSED, INFORMATIONAL and NON-STRICT pass.  The grade of every case
is in the records (--records) and the terminal summary.
"""

from __future__ import annotations

import concurrent.futures
import re
import sys
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from conformance.grading import Grade
from conformance.protocols import adapter_for
from conformance.records import RecordWriter, grade_table, new_run_id, utc_now
from conformance.scenario.loader import MAX_FILE_BYTES, BrokenCase, Case, ScenarioError, load_file
from conformance.scenario.runner import CaseResult, CaseRunner
from conformance.scenario.schedule import AUTO_JOBS, CaseScheduler, case_demand, parse_jobs
from conformance.scenario.timing import parse_time_scale
from conformance.targets import Target, TargetError, parse_target, probe_endpoint
from conformance.vectors.check import VectorFileError, adapter_for as vector_adapter, check_test, load_vector_file

_STATE = pytest.StashKey["_State"]()
_GRADE_STATUS = pytest.StashKey[Any]()
_SEVERITY = {"MUST": "critical", "SHOULD": "normal", "MAY": "minor", "INFO": "trivial"}


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("conformance", "protocol conformance suite")
    group.addoption("--target", default="ref",
                    help="ref (default), tcp://127.0.0.1:PORT, ws://127.0.0.1:PORT/PATH, cmd:COMMAND-with-{port}, docker:IMAGE")
    group.addoption("--target-client", default=None,
                    help="command running a client-role target: {url} and {testcase} are substituted")
    group.addoption("--impl-name", default=None, help="implementation name in the records (default: from --target)")
    group.addoption("--impl-version", default=None,
                    help="implementation version in the records (default: what the target says, else unknown)")
    # --strict is pytest's own flag (strict markers/config); the suite reads it too: NON-STRICT findings fail.
    group.addoption("--param", action="append", default=[], metavar="NAME=MS",
                    help="a target timer or one of the suite's waits, e.g. heartbeat_timeout_ms=15000, silence_ms=1000")
    group.addoption("--time-scale", default="1", metavar="F",
                    help="stretch every wait on the target (silence windows, within_ms, sleeps, case deadlines) "
                         "by F > 0 for a slow target; keep-alive pacing and lower bounds are not stretched")
    group.addoption("--records", default=None, help="write result records (JSON lines) here")
    group.addoption("--wirelogs", default=None, help="write the wire log of every case that did not pass here")
    group.addoption("--run-id", default=None, help="run id for the records (default: generated)")
    group.addoption("--schedule-log", default=None, metavar="FILE",
                    help="write when each case ran (JSON lines: case, serial group, heavy, paced, start and end in s)")
    group.addoption("--jobs", default="auto", metavar="N|auto",
                    help="cases run at once, each on its own connections; auto (the default): "
                         f"{AUTO_JOBS} against ref and the project's own images, 1 against any other target. "
                         "Cases marked serial (shared target state) never overlap (against ref: each gets a "
                         "server of its own), nor heavy cases and paced ones (fault proxy, keep-alive); results are reported in "
                         "pytest's order")


class _State:
    def __init__(self, config: pytest.Config) -> None:
        opt = config.option
        self.target_spec: str = opt.target
        self.strict: bool = bool(getattr(opt, "strict", False))
        self.run_id = opt.run_id or new_run_id()
        self._impl_version: str | None = opt.impl_version
        self._target_version: str | None = None  # asked once, when the target is made (docker asks the engine)
        self.impl_name = opt.impl_name
        self.client_command = opt.target_client
        self.params = _parse_params(opt.param)
        try:
            self.time_scale = parse_time_scale(opt.time_scale)
        except ValueError:
            raise pytest.UsageError(f"--time-scale wants a number above 0, got {opt.time_scale!r}") from None
        records = Path(opt.records) if opt.records else None
        wirelogs = Path(opt.wirelogs) if opt.wirelogs else (records.parent / "wirelogs" if records else None)
        self.writer = RecordWriter(records, wirelogs)
        self._target: Target | None = None
        self._target_error: str | None = None
        # (protocol, transport) -> (url, error): each endpoint is started and probed once per run
        self._endpoints: dict[tuple[str, str], tuple[str | None, str | None]] = {}
        self.allure = config.pluginmanager.hasplugin("allure_pytest")
        try:
            self._jobs = parse_jobs(opt.jobs)
        except ValueError:
            raise pytest.UsageError(f"--jobs wants a whole number from 1 or auto, got {opt.jobs!r}") from None
        self._scheduler: CaseScheduler | None = None
        self.scheduled_ahead = False  # with --jobs above 1: every selected case handed to the scheduler

    @property
    def jobs(self) -> int:
        """Cases at once: --jobs N, or for auto, concurrent against the suite's own implementations only
        (a user's server may not welcome a dozen connections at once: they ask with --jobs N)."""
        if self._jobs is not None:
            return self._jobs
        return AUTO_JOBS if _own_implementation(self.target_spec) else 1

    @property
    def scheduled(self) -> CaseScheduler | None:
        return self._scheduler

    def scheduler(self) -> CaseScheduler:
        if self._scheduler is None:
            self._scheduler = CaseScheduler(self.jobs)
        return self._scheduler

    def target(self) -> Target:
        if self._target_error:
            raise TargetError(self._target_error)
        if self._target is None:
            try:
                self._target = parse_target(self.target_spec, name=self.impl_name, client_command=self.client_command)
            except TargetError as exc:
                self._target_error = str(exc)
                raise
            if not self._impl_version:
                self._target_version = self._target.version()
        return self._target

    def endpoint(self, protocol: str, transport: str) -> str | None:
        """The target's URL for this protocol and transport, checked reachable once; an endpoint
        that failed to start or to answer raises the same TargetError for every case after."""
        key = (protocol, transport)
        if key not in self._endpoints:
            try:
                target = self.target()
                url = target.endpoint(protocol, transport)
                if url is not None and not target.in_process:
                    probe_endpoint(url)
                self._endpoints[key] = (url, None)
            except TargetError as exc:
                self._endpoints[key] = (None, str(exc))
        url, error = self._endpoints[key]
        if error:
            raise TargetError(error)
        return url

    def endpoint_errors(self) -> list[str]:
        return sorted({f"{p}/{t}: {e}" for (p, t), (_, e) in self._endpoints.items() if e})

    @property
    def implementation(self) -> str:
        return self.impl_name or (self._target.name if self._target else self.target_spec)

    @property
    def impl_version(self) -> str:
        if self._impl_version:
            return self._impl_version
        return self._target_version or "unknown"

    def close(self) -> None:
        if self._scheduler is not None:
            self._scheduler.close()  # the cases end before the servers they talk to
        if self._target is not None:
            self._target.close()


#: docker images the project builds of its own implementations (conformance/images)
_OWN_IMAGE_PREFIXES = ("docker:conformance-ref-",)


def _own_implementation(spec: str) -> bool:
    return spec in ("ref", "reference") or spec.startswith(_OWN_IMAGE_PREFIXES)


def _parse_params(items: list[str]) -> dict[str, int]:
    params = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not value.strip().isdigit():
            raise pytest.UsageError(f"--param wants NAME=MILLISECONDS, got {item!r}")
        params[name.strip()] = int(value)
    return params


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "conformance: a conformance case from a scenario file")
    config.stash[_STATE] = _State(config)
    if config.stash[_STATE].allure:
        from conformance.allure_view import register_grade_status
        config.stash[_GRADE_STATUS] = register_grade_status()


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> int | None:
    """A target that cannot be parsed is a usage error: one line and exit status 2, before any
    case (pytest.exit would add a banner; returning the status here ends the run quietly)."""
    opt = config.option
    if getattr(opt, "help", False) or getattr(opt, "version", False):
        return None
    try:
        parse_target(opt.target, name=opt.impl_name, client_command=opt.target_client).close()
    except TargetError as exc:
        sys.stderr.write(f"conformance: bad --target or --target-client: {exc}\n")
        return 2
    return None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    """A case's duration (JUnit's time) is its own exchange's, not how long pytest's thread waited
    for it: with --jobs that wait is whatever was left of a case that ran beside the ones before."""
    outcome = yield
    seconds = getattr(item, "case_seconds", None)
    if call.when == "call" and seconds is not None:
        outcome.get_result().duration = seconds


def pytest_unconfigure(config: pytest.Config) -> None:
    state = config.stash.get(_STATE, None)
    if state is not None:
        state.close()
    grade_status = config.stash.get(_GRADE_STATUS, None)
    if grade_status is not None:
        from conformance.allure_view import unregister
        unregister(grade_status)


def pytest_sessionfinish(session: pytest.Session) -> None:
    state = session.config.stash.get(_STATE, None)
    if state is not None and session.config.option.schedule_log and state.scheduled is not None:
        state.scheduled.write_spans(Path(session.config.option.schedule_log))
    results = getattr(session.config.option, "allure_report_dir", None)
    if state is None or not state.allure or not results or not state.writer.counts:
        return
    from conformance.allure_view import write_environment
    write_environment(Path(results), implementation=state.implementation, version=state.impl_version,
                      protocols=sorted({p for p, _ in state.writer.counts}), target=state.target_spec)


_TOP_KEY = re.compile(rb"^(protocol|cases):[ \t]*([^\s#]*)", re.MULTILINE)


def _top_keys(path: Path) -> dict[str, str]:
    """The file's top-level `protocol:` and `cases:` keys (and protocol's value), read without parsing YAML."""
    try:
        with path.open("rb") as handle:
            head = handle.read(MAX_FILE_BYTES)
    except OSError:
        return {}
    return {key.decode(): value.decode("utf-8", "replace").strip("'\"") for key, value in _TOP_KEY.findall(head)}


def _is_scenario(path: Path, session: pytest.Session | None = None) -> bool:
    """A YAML file under a scenarios/ folder, or anywhere with a scenario's top-level keys.

    Other YAML met while walking a folder (CI files, other plugins' YAML tests) is left alone. A
    file named on the command line needs only one of the keys, so that a scenario file missing
    the other is reported as broken rather than silently not collected.
    """
    if path.suffix not in (".yaml", ".yml") or path.name.startswith("_"):
        return False
    if "scenarios" in path.parts:
        return True
    keys = _top_keys(path).keys() & {"protocol", "cases"}
    if session is not None and session.isinitpath(path):
        return bool(keys)
    return keys == {"protocol", "cases"}


def _is_vector(path: Path) -> bool:
    return path.suffix == ".json" and "vectors" in path.parts and "schema" not in path.parts


def pytest_collect_file(file_path: Path, parent: pytest.Collector):
    if _is_scenario(file_path, parent.session):
        return ScenarioYamlFile.from_parent(parent, path=file_path)
    if _is_vector(file_path):
        return VectorJsonFile.from_parent(parent, path=file_path)
    return None


# -- scenarios ---------------------------------------------------------------

class ScenarioYamlFile(pytest.File):
    def collect(self):
        try:
            protocol = self.path.parent.name
            if protocol not in _protocols_present():  # a file outside scenarios/<protocol>/
                protocol = _top_keys(self.path).get("protocol", "")
            adapter = adapter_for(protocol) if protocol in _protocols_present() else None
            loaded = load_file(self.path, adapter and adapter.frame_check, adapter and adapter.shared_state_use)
        except ScenarioError as exc:
            yield BrokenScenarioItem.from_parent(self, name="<file>", error=str(exc), case=None)
            return
        for case in loaded.cases:
            if isinstance(case, BrokenCase):
                yield BrokenScenarioItem.from_parent(self, name=case.id, error=case.error, case=case)
                continue
            for transport in case.transports or adapter_for(case.protocol).transports:
                yield ScenarioItem.from_parent(self, name=f"{case.id}[{transport}]", case=case, transport=transport)


def _protocols_present() -> set[str]:
    from conformance.protocols import available
    return set(available())


class BrokenScenarioItem(pytest.Item):
    """A file or case that failed validation: an ERROR, while the rest of the run goes on."""

    def __init__(self, *, error: str, case: BrokenCase | None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.error = error
        self.case = case

    def runtest(self) -> None:
        state = self.config.stash[_STATE]
        protocol, family, case_id = self._identity()
        state.writer.add({
            "run": state.run_id, "time": utc_now(), "implementation": state.implementation,
            "implementationVersion": state.impl_version, "target": state.target_spec,
            "protocol": protocol, "family": family, "case": case_id,
            "transport": "", "requirement": "MUST", "grade": Grade.ERROR.value, "exchangeGrade": Grade.ERROR.value,
            "closeGrade": None, "message": self.error, "spec": "", "specRef": "", "durationMs": 0, "wirelog": None,
        })
        raise ScenarioError(self.error)

    def _identity(self) -> tuple[str, str, str]:
        """(protocol, family, case id) for the record, even when the file could not be read.

        Scenario files are scenarios/<protocol>/<family>.yaml, so the path names
        both; an empty family made the record invalid and the report dropped it.
        A case id stable across machines (not the absolute path) keeps the
        broken file in one matrix row from run to run.
        """
        if self.case is not None:
            return self.case.protocol or self.path.parent.name, self.case.family or self.path.stem, self.case.id
        protocol, family = self.path.parent.name, self.path.stem
        return protocol, family, f"{protocol}/{family}/<file>"

    def repr_failure(self, excinfo, style=None) -> str:
        return f"broken scenario: {excinfo.value}"

    def reportinfo(self):
        return self.path, None, f"broken scenario {self.name}"


class ScenarioItem(pytest.Item):
    def __init__(self, *, case: Case, transport: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.case = case
        self.transport = transport
        self.add_marker(pytest.mark.conformance)
        self.user_properties.append(("requirement", case.requirement))
        self._pending: concurrent.futures.Future | _Early | None = None
        self.case_seconds: float | None = None  # the exchange's own duration, once it ran

    def schedule(self, state: _State) -> None:
        """Start the case's exchange (or settle its grade when it cannot run); once per item."""
        if self._pending is not None:
            return
        case = self.case
        adapter = adapter_for(case.protocol)
        try:
            target = state.target()
            params = {**target.params(case.protocol), **state.params}
            runner = CaseRunner(case, adapter, self.transport, params, state.time_scale)
            if case.role == "client":
                launcher = target.client_launcher(case.protocol)
                if launcher is None:
                    self._pending = _Early(Grade.NOT_APPLICABLE, "the target offers no client role (use --target-client)")
                    return
                exchange = partial(runner.against_client, launcher)
            else:
                url = state.endpoint(case.protocol, self.transport)
                if url is None:
                    self._pending = _Early(Grade.NOT_APPLICABLE, f"the target offers no {self.transport} endpoint")
                    return
                exchange = partial(runner.against_server, url)
        except TargetError as exc:
            self._pending = _Early(Grade.ERROR, str(exc))
            return
        group = f"{case.protocol} on {state.target_spec}" if case.serial else None
        private = getattr(target, "private_endpoint", None)
        if case.serial and case.role == "server" and private is not None:
            # the in-process reference gives such a case a server of its own: no state to share, no turn to wait
            exchange, group = partial(_on_private_server, private(case.protocol, self.transport), runner), None
        demand = case_demand(case.steps, adapter.macros, runner.params, case.fault)
        self._pending = state.scheduler().submit(self.nodeid, group, exchange, demand)

    def runtest(self) -> None:
        state: _State = self.config.stash[_STATE]
        if state.jobs > 1 and not state.scheduled_ahead:
            # the first case reached hands every selected case after it to the scheduler; pytest then
            # reports them in its order as their results arrive (not sooner: a session that runs
            # other tests first, as the project's own does, runs them undisturbed)
            state.scheduled_ahead = True
            with state.scheduler().batch():  # they start in order of priority, not of collection
                for item in self.session.items[self.session.items.index(self):]:
                    if isinstance(item, ScenarioItem):
                        item.schedule(state)
        self.schedule(state)
        pending, self._pending = self._pending, _DONE
        if isinstance(pending, _Early):
            self._finish(state, pending.grade, None, None, pending.message, 0, None)
            return
        result: CaseResult = pending.result()
        self.case_seconds = result.duration_ms / 1000
        log_text = None  # only a case that did not pass keeps its wire log: render it only then
        if result.grade is not Grade.PASSED:
            log_text = result.log.render()
            if logs := state.target().logs():
                log_text += "\n" + logs
        self._finish(state, result.grade, result.exchange, result.close, result.message, result.duration_ms, log_text)

    def _finish(self, state: _State, grade: Grade, exchange: Grade | None, close: Grade | None, message: str,
                duration_ms: float, log_text: str | None) -> None:
        case = self.case
        wirelog = None
        if log_text is not None and grade is not Grade.PASSED:
            wirelog = state.writer.write_wirelog(case.id, self.transport, log_text)
        state.writer.add({
            "run": state.run_id, "time": utc_now(), "implementation": state.implementation,
            "implementationVersion": state.impl_version, "target": state.target_spec,
            "protocol": case.protocol, "family": case.family, "case": case.id, "transport": self.transport,
            "requirement": case.requirement, "grade": grade.value,
            "exchangeGrade": (exchange or grade).value, "closeGrade": close.value if close else None,
            "message": message, "spec": case.spec, "specRef": case.spec_ref,
            "durationMs": round(duration_ms, 3), "wirelog": wirelog,
        })
        self.user_properties.append(("grade", grade.value))
        if state.allure:
            self._allure(state, grade, message, log_text, wirelog)
        if grade in (Grade.UNSUPPORTED, Grade.NOT_APPLICABLE):
            pytest.skip(f"{grade.value}: {message}")
        if grade.is_failure(strict=state.strict):
            raise CaseFailed(grade, message)

    def _allure(self, state: _State, grade: Grade, message: str, log_text: str | None, wirelog: str | None) -> None:
        import allure

        from conformance.allure_view import MATRIX_PAGE, Verdict, profile_page, title
        from conformance.spec_links import public_spec_url, split_spec_ref
        case = self.case
        allure.dynamic.epic(case.protocol)
        allure.dynamic.feature(case.family)
        allure.dynamic.story(case.id)
        allure.dynamic.parent_suite(case.protocol)
        allure.dynamic.suite(case.family)
        allure.dynamic.sub_suite(case.id)
        name = title(case.id, self.transport, grade)
        allure.dynamic.title(name)
        allure.dynamic.severity(_SEVERITY.get(case.requirement, "normal"))
        allure.dynamic.label("requirement", case.requirement)
        allure.dynamic.label("grade", grade.value)
        if grade is not Grade.PASSED:
            allure.dynamic.tag(grade.value)
        allure.dynamic.parameter("target", state.target_spec)
        allure.dynamic.parameter("implementation", state.implementation)
        allure.dynamic.parameter("transport", self.transport)
        section = split_spec_ref(case.spec_ref)[1]
        if spec_url := public_spec_url(case.protocol, section):
            allure.dynamic.link(spec_url, name=f"spec: {section or case.protocol}")
        if profile := profile_page(case.protocol):
            allure.dynamic.link(profile, name=f"requirement: {case.requirement} ({case.protocol} profile)")
        allure.dynamic.link(f"{MATRIX_PAGE}#matrix-{case.protocol}", name="compliance matrix")
        description = f"**{case.title}**\n\n> {case.spec}\n\n({case.requirement}, {case.spec_ref})"
        if case.profile:
            description += f"\n\nProfile: {case.profile}"
        allure.dynamic.description(description + f"\n\nGrade: **{grade.value}** {message}")
        if log_text is not None and grade is not Grade.PASSED:
            allure.attach(log_text, name="wire log", attachment_type=allure.attachment_type.TEXT)
        self.config.stash[_GRADE_STATUS].expect(name, Verdict(grade, message, wirelog, state.strict))

    def repr_failure(self, excinfo, style=None) -> str:
        if isinstance(excinfo.value, CaseFailed):
            return (f"{excinfo.value.grade.value}: {self.case.id} [{self.transport}]\n"
                    f"  spec ({self.case.requirement}): {self.case.spec}\n  {excinfo.value.message}")
        return super().repr_failure(excinfo, style)

    def reportinfo(self):
        return self.path, self.case.line - 1, f"{self.case.id} [{self.transport}]"


async def _on_private_server(server, runner: CaseRunner) -> CaseResult:
    async with server as url:
        return await runner.against_server(url)


@dataclass(frozen=True)
class _Early:
    """A grade settled before any exchange: the target offers no endpoint, or could not start."""

    grade: Grade
    message: str


_DONE = _Early(Grade.ERROR, "the case was already run")


class CaseFailed(AssertionError):
    """A FAILED (or ERROR) grade; an AssertionError so Allure shows it as failed, not broken."""

    def __init__(self, grade: Grade, message: str) -> None:
        super().__init__(f"{grade.value}: {message}")
        self.grade = grade
        self.message = message


# -- vectors -----------------------------------------------------------------

class VectorJsonFile(pytest.File):
    def collect(self):
        try:
            doc = load_vector_file(self.path)
            adapter = vector_adapter(doc["protocol"])
        except (VectorFileError, ImportError) as exc:
            yield BrokenVectorItem.from_parent(self, name="<file>", error=str(exc))
            return
        for group in doc["testGroups"]:
            for test in group["tests"]:
                yield VectorItem.from_parent(self, name=f"tc{test['tcId']}", adapter=adapter, group=group, test=test)


class BrokenVectorItem(pytest.Item):
    def __init__(self, *, error: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.error = error

    def runtest(self) -> None:
        raise VectorFileError(self.error)

    def repr_failure(self, excinfo, style=None) -> str:
        return f"broken vector file: {excinfo.value}"


class VectorItem(pytest.Item):
    def __init__(self, *, adapter, group: dict, test: dict, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.adapter = adapter
        self.group = group
        self.test = test

    def runtest(self) -> None:
        ok, detail = check_test(self.adapter, self.group, self.test)
        if not ok:
            raise AssertionError(f"tcId {self.test['tcId']} ({self.test['comment']}): {detail}")

    def repr_failure(self, excinfo, style=None) -> str:
        return str(excinfo.value)

    def reportinfo(self):
        return self.path, None, f"{self.path.name} tcId {self.test['tcId']}"


# -- summary -----------------------------------------------------------------

def pytest_terminal_summary(terminalreporter, exitstatus, config: pytest.Config) -> None:
    state = config.stash.get(_STATE, None)
    if state is None or not state.writer.counts:
        return
    tr = terminalreporter
    tr.section("conformance summary")
    order = [g.value for g in Grade]
    tr.write_line(f"target: {state.target_spec}   implementation: {state.implementation} {state.impl_version}   "
                  f"run: {state.run_id}")
    for line in grade_table(state.writer.counts, state.writer.cases, order):
        tr.write_line(line)
    for error in state.endpoint_errors():
        tr.write_line(f"target endpoint not usable, its cases are ERROR: {error.splitlines()[0]}")
    for record in state.writer.failures[:30]:
        tr.write_line(f"  {record['grade']:<11} {record['case']} [{record['transport']}] {record['message'][:150]}")
    if len(state.writer.failures) > 30:
        tr.write_line(f"  ... and {len(state.writer.failures) - 30} more (see the records)")
    if state.writer.path:
        tr.write_line(f"records: {state.writer.path}")
