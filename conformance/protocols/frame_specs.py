"""Where a case names frames, for every adapter's load-time ``frame_check``.

The runner reads frames from these places in a case: a step's ``send``; an
``expect``'s own fields, its ``any_of`` / ``all_of`` alternatives, its
``allow`` list and its ``unsupported_if``; an ``expect_close``'s ``allow``
list; a ``keep_alive``'s ``send``; the case's ``noise``; and all of
that again inside ``repeat``.  Each adapter used to walk that tree itself and
the copies drifted (some skipped ``allow`` or ``unsupported_if``), so a typo
there went unnoticed until the case ran.  This walk is the one copy; adapters
only say what a valid sent or matched frame of their protocol looks like.

An ``any_of`` alternative may be a list of frames, a sequence: the first
frame chooses it and the others must follow, in order.

It also refuses the shapes the runner would silently half-ignore: fields
beside ``any_of``/``all_of`` (the runner only reads the list), both lists in
one expect, and a ``closed`` alternative that names other fields; and the
shapes that would match anything, so a case could pass whatever the target
does: an expect that names no frame, a frame spec with no fields, a field
matched by ``{}``, and a case that expects nothing at all.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

#: Keys of an expect step that shape the wait rather than describe a frame.
EXPECT_OPTIONS = ("within_ms", "level", "any_of", "all_of", "allow", "unsupported_if", "informational_if", "closed",
                  "save")

Problem = tuple[tuple, str]
Check = Callable[[dict[str, Any], tuple], Iterable[Problem]]


#: Steps that let a case fail: a case with none of them (and no ``client_exit``) passes always.
GRADED_STEPS = ("expect", "expect_close", "expect_silence", "expect_exit", "keep_alive", "macro")


def check_frame_specs(case: dict[str, Any], *, send: Check, match: Check,
                      exact_fields: Iterable[str] = ()) -> list[Problem]:
    """Problems with the frames a case names, as (path inside the case, message).

    ``send(spec, path)`` sees every sent frame spec (hex forms included: the
    adapter knows its own raw forms); ``match(spec, path)`` every frame spec
    matched against the target's frames, options already taken out.
    ``exact_fields`` are fields an adapter compares whole, where ``{}`` means
    "empty" rather than "anything".
    """
    problems: list[Problem] = []
    exact = frozenset(exact_fields)
    checked = _checking(match, exact)
    _steps(case.get("steps"), ("steps",), send, checked, problems)
    noise = case.get("noise")
    if isinstance(noise, list):
        for j, spec in enumerate(noise):
            _match_one(spec, ("noise", j), checked, problems)
    if isinstance(case.get("steps"), list) and case.get("client_exit") is None and not _grades(case["steps"]):
        problems.append((("steps",), "the case expects nothing (no expect, expect_close, expect_silence, keep_alive, "
                                     "expect_exit or macro, no client_exit): it would pass whatever the target does"))
    return problems


def _grades(steps: list[Any]) -> bool:
    for step in steps:
        if not isinstance(step, dict):
            continue
        if any(key in step for key in GRADED_STEPS):
            return True
        if isinstance(step.get("repeat"), dict) and isinstance(step["repeat"].get("steps"), list):
            if _grades(step["repeat"]["steps"]):
                return True
    return False


def _checking(match: Check, exact: frozenset[str]) -> Check:
    """The adapter's check, after refusing specs that constrain nothing."""

    def check(spec: dict[str, Any], path: tuple) -> Iterable[Problem]:
        if not spec:
            return [(path, "a frame to match names at least one field ({} would match any frame)")]
        empty = [key for key, value in spec.items() if value == {} and key not in exact]
        if empty:
            return [(path + (key,), f"{key}: {{}} constrains nothing; give a value, or in/min/max")
                    for key in empty]
        return match(spec, path)
    return check


def _steps(steps: Any, path: tuple, send: Check, match: Check, problems: list[Problem]) -> None:
    if not isinstance(steps, list):
        return  # the schema reports a malformed step list
    for i, step in enumerate(steps):
        if not isinstance(step, dict):
            continue
        if isinstance(step.get("send"), dict):
            problems.extend(send(step["send"], path + (i, "send")))
        keep_alive = step.get("keep_alive")
        if isinstance(keep_alive, dict) and isinstance(keep_alive.get("send"), dict):
            problems.extend(send(keep_alive["send"], path + (i, "keep_alive", "send")))
        if isinstance(step.get("expect"), dict):
            _expect(step["expect"], path + (i, "expect"), match, problems)
        close = step.get("expect_close")
        if isinstance(close, dict) and isinstance(close.get("allow"), list):
            for j, alt in enumerate(close["allow"]):
                _match_one(alt, path + (i, "expect_close", "allow", j), match, problems)
        if isinstance(step.get("repeat"), dict):
            _steps(step["repeat"].get("steps"), path + (i, "repeat", "steps"), send, match, problems)


def _expect(spec: dict[str, Any], path: tuple, match: Check, problems: list[Problem]) -> None:
    fields = {k: v for k, v in spec.items() if k not in EXPECT_OPTIONS}
    lists = [key for key in ("any_of", "all_of") if key in spec]
    if len(lists) > 1:
        problems.append((path + ("all_of",), "an expect takes any_of or all_of, not both"))
    if lists and fields:
        first = sorted(fields)[0]
        problems.append((path + (first,), f"field {first!r} beside {lists[0]} would be ignored: "
                                          f"put it in each alternative"))
    if "closed" in spec:
        if spec["closed"] is not True or fields or lists:
            problems.append((path + ("closed",), "closed is `closed: true` alone (the connection closes); "
                                                 "to accept a frame or a close, use any_of with {closed: true}"))
    for key in lists:
        alternatives = spec[key]
        if not isinstance(alternatives, list) or not alternatives:
            problems.append((path + (key,), f"{key} is a non-empty list of frames"))
            continue
        for j, alt in enumerate(alternatives):
            if key == "any_of" and isinstance(alt, dict) and "closed" in alt:
                if set(alt) != {"closed"} or alt["closed"] is not True:
                    problems.append((path + (key, j), "a close alternative is exactly {closed: true}"))
                continue
            if key == "any_of" and isinstance(alt, list):
                # a sequence: its first frame chooses it, the others must follow in order
                if len(alt) < 2:
                    problems.append((path + (key, j), "a sequence alternative lists two frames or more"))
                for k, frame in enumerate(alt):
                    _match_one(frame, path + (key, j, k), match, problems)
                continue
            _match_one(alt, path + (key, j), match, problems)
    if not lists and "closed" not in spec:
        if not fields:
            problems.append((path, "an expect names the frame it waits for, or is {closed: true}: "
                                   "this one would match any frame"))
        else:
            _match_one(fields, path, match, problems)
    allow = spec.get("allow")
    if allow is not None:
        if not isinstance(allow, list):
            problems.append((path + ("allow",), "allow is a list of frames the target may send meanwhile"))
        else:
            for j, alt in enumerate(allow):
                _match_one(alt, path + ("allow", j), match, problems)
    for option in ("unsupported_if", "informational_if"):
        if option in spec:
            _match_one(spec[option], path + (option,), match, problems)
    save = spec.get("save")
    if save is not None and not (isinstance(save, dict)
                                 and all(isinstance(k, str) and isinstance(v, str) for k, v in save.items())):
        problems.append((path + ("save",), "save maps variable names to field names"))


def _match_one(spec: Any, path: tuple, match: Check, problems: list[Problem]) -> None:
    if not isinstance(spec, dict):
        problems.append((path, "a frame to match is a mapping of fields"))
        return
    problems.extend(match(spec, path))
